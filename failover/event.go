package failover

import "time"

// EventKind says what an Event reports.
type EventKind int

const (
	// EventConnect is one connection attempt to Host: Err is nil when it succeeded.
	EventConnect EventKind = iota + 1
	// EventHostFailed is a communication error on an established connection to Host (Err).
	EventHostFailed
	// EventSwitch is the pool moving from From to Host after a failure (Err is the cause).
	EventSwitch
	// EventFallBack is the pool returning from From to the primary (Host).
	EventFallBack
	// EventFallBackFailed is an attempt to return to the primary (Host) that failed (Err);
	// the pool stays on From and the fall-back clocks restart.
	EventFallBackFailed
)

// String returns the kind's name, e.g. "connect".
func (k EventKind) String() string {
	switch k {
	case EventConnect:
		return "connect"
	case EventHostFailed:
		return "host-failed"
	case EventSwitch:
		return "switch"
	case EventFallBack:
		return "fall-back"
	case EventFallBackFailed:
		return "fall-back-failed"
	}
	return "unknown"
}

// Event is what Options.OnEvent receives. Errors in events never contain a password
// (go-sql-driver's errors do not carry the DSN, and this package never adds it).
type Event struct {
	Kind EventKind
	// Time is the Cluster clock's time of the event.
	Time time.Time
	// Host is the host:port the event is about (attempted, failed, or moved to).
	Host string
	// From is the host:port the pool left, for EventSwitch, EventFallBack and
	// EventFallBackFailed.
	From string
	// Err is the failure, for failed attempts, EventHostFailed and EventSwitch.
	Err error
}

// String renders the event on one line, e.g. "connect 10.0.0.2:3306 ok".
func (e Event) String() string {
	s := e.Kind.String() + " " + e.Host
	if e.From != "" {
		s += " from " + e.From
	}
	if e.Err != nil {
		return s + ": " + e.Err.Error()
	}
	if e.Kind == EventConnect {
		return s + " ok"
	}
	return s
}
