package format

import "time"

// SetFailFast sets how long r fails requests at once after an outage, for
// tests that switch a registry's failures faster than that.
func SetFailFast(r *Registry, d time.Duration) { r.failFast = d }
