package kafkatest

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
)

// Listener is an extra client listener of a local broker, next to its
// PLAINTEXT one. Kafka answers metadata requests with the advertised
// address of the listener the request arrived on, so a client that
// bootstraps through a listener keeps using it: that is how a test puts a
// proxy in front of some clients only (each proxied listener advertises
// its proxy) while others keep a direct path to the broker.
type Listener struct {
	// Name is the listener name: upper-case letters, digits and '_';
	// PLAINTEXT and CONTROLLER are taken.
	Name string
	// Port is the port on 127.0.0.1; 0 picks a free one.
	Port int
	// Advertised is the "host:port" returned in metadata to clients of
	// this listener, for example a proxy that forwards to 127.0.0.1:Port.
	// Empty means 127.0.0.1:Port.
	Advertised string
	// Protocol is the listener's security protocol: PLAINTEXT (the
	// default), SSL, SASL_PLAINTEXT or SASL_SSL. A secured listener
	// needs its TLS and SASL properties in Options.Properties; see
	// [Secure], which sets them for a SASL_SSL and an SSL listener.
	Protocol string
}

var listenerName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// protocols are Kafka's security protocols.
var protocols = map[string]bool{"PLAINTEXT": true, "SSL": true, "SASL_PLAINTEXT": true, "SASL_SSL": true}

// WithListeners returns a copy of opts for a broker that also listens on
// ls. PLAINTEXT stays the inter-broker listener and the one [Broker.Addr]
// returns (the readiness probe uses it); it keeps advertising
// opts.AdvertisedAddr, or itself. The listener properties name every port,
// so WithListeners fixes opts.Port and opts.ControllerPort, picking free
// ones when they are zero; [StartLocal] then cannot re-pick them if
// another process takes one in the meantime, and the caller should retry
// with a new WithListeners call when the start fails. Keys of
// opts.Properties other than the three listener ones are kept.
// The returned listeners have their ports filled in.
func WithListeners(opts Options, ls ...Listener) (Options, []Listener, error) {
	out := opts
	out.Properties = maps.Clone(opts.Properties)
	if out.Properties == nil {
		out.Properties = make(map[string]string)
	}
	taken := make(map[int]bool)
	pick := func(p int) (int, error) {
		for p == 0 || taken[p] {
			var err error
			if p, err = FreePort(); err != nil {
				return 0, err
			}
		}
		taken[p] = true
		return p, nil
	}
	var err error
	if out.Port, err = pick(out.Port); err != nil {
		return opts, nil, err
	}
	if out.ControllerPort, err = pick(out.ControllerPort); err != nil {
		return opts, nil, err
	}
	plainAdv := out.AdvertisedAddr
	if plainAdv == "" {
		plainAdv = fmt.Sprintf("127.0.0.1:%d", out.Port)
	}
	listeners := []string{
		fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", out.Port),
		fmt.Sprintf("CONTROLLER://127.0.0.1:%d", out.ControllerPort),
	}
	advertised := []string{"PLAINTEXT://" + plainAdv}
	protocolMap := []string{"CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"}
	seen := map[string]bool{"PLAINTEXT": true, "CONTROLLER": true}
	filled := make([]Listener, len(ls))
	for i, l := range ls {
		if !listenerName.MatchString(l.Name) || seen[l.Name] {
			return opts, nil, fmt.Errorf("kafkatest: listener name %q: want a new name of upper-case letters, digits and _", l.Name)
		}
		seen[l.Name] = true
		if l.Protocol == "" {
			l.Protocol = "PLAINTEXT"
		}
		if !protocols[l.Protocol] {
			return opts, nil, fmt.Errorf("kafkatest: listener %s: protocol %q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", l.Name, l.Protocol)
		}
		if l.Port, err = pick(l.Port); err != nil {
			return opts, nil, err
		}
		if l.Advertised == "" {
			l.Advertised = fmt.Sprintf("127.0.0.1:%d", l.Port)
		}
		listeners = append(listeners, fmt.Sprintf("%s://127.0.0.1:%d", l.Name, l.Port))
		advertised = append(advertised, l.Name+"://"+l.Advertised)
		protocolMap = append(protocolMap, l.Name+":"+l.Protocol)
		filled[i] = l
	}
	out.Properties["listeners"] = strings.Join(listeners, ",")
	out.Properties["advertised.listeners"] = strings.Join(advertised, ",")
	out.Properties["listener.security.protocol.map"] = strings.Join(protocolMap, ",")
	return out, filled, nil
}
