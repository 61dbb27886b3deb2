package transform

// Decision is what becomes of a source record whose chain failed. The relay
// and `relay test` both take it from Decide, so that a pipeline's tests
// predict what the relay does.
type Decision struct {
	// Release: give the record back to the broker for another delivery.
	// Otherwise it is dead-lettered, unless Hold.
	Release bool
	// Hold: keep the record and try it again later (KindHold): its
	// transform needs what is out of reach now, not the record's fault.
	// Neither released (which would spend a delivery) nor dead-lettered.
	Hold bool
	// Exhausted: dead-lettered because a retryable failure used up the
	// attempts (rather than because the failure is permanent).
	Exhausted bool
	// Err is the classified failure (see Classify), with the failing
	// step's name.
	Err *Error
}

// Decide says what to do with a record whose chain failed with err (not
// nil) on the record's deliveryCount-th delivery, when a record gets
// maxAttempts deliveries: a retryable failure before the last attempt
// releases the record; a retryable failure on the last attempt (or
// later), and any permanent failure, dead-letter it.
//
// A failure caused by the relay shutting down must be released whatever
// Decide says: the caller checks its context first.
func Decide(err error, deliveryCount, maxAttempts int32) Decision {
	e := Classify(err)
	if e.Kind == KindHold {
		return Decision{Hold: true, Err: e}
	}
	if e.Kind == KindRetry {
		if deliveryCount < maxAttempts {
			return Decision{Release: true, Err: e}
		}
		return Decision{Exhausted: true, Err: e}
	}
	return Decision{Err: e}
}
