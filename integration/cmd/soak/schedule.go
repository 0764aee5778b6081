package main

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is one sort of fault.
type Kind int

const (
	// Kill is kill -9 of the primary (node 1), restarted after Hold.
	Kill Kind = iota
	// Freeze is SIGSTOP of a node's server, SIGCONT after Hold.
	Freeze
	// Blackhole drops every byte through a node's proxy, both ways, until Hold ends
	// (removing it closes the connections it held).
	Blackhole
	// Reset makes a node's proxy reset the next data chunk of every connection, upstream
	// (the request is lost) or downstream (the reply is), for Hold.
	Reset
	// Latency delays every server-to-client chunk of a node's proxy by Latency, for Hold.
	Latency
	// Refuse turns a node's proxy off (connections refused, open ones closed) for Hold.
	Refuse
	// ReadOnly sets the primary's global read_only for Hold.
	ReadOnly
	numKinds
)

var kindNames = [numKinds]string{"kill", "freeze", "blackhole", "reset", "latency", "refuse", "read_only"}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// Fault is one entry of the schedule: at At (from the start of the fault loop) Kind is
// done to Node, and healed Hold later, before the next fault starts.
type Fault struct {
	At       time.Duration
	Kind     Kind
	Node     int           // from 1; always 1 for Kill and ReadOnly
	Hold     time.Duration // how long the fault lasts before it is healed
	Upstream bool          // Reset: the request direction (else the reply's)
	Latency  time.Duration // Latency: the added delay
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s node%d for %v", f.Kind, f.Node, f.Hold)
	switch f.Kind {
	case Reset:
		if f.Upstream {
			s += " (upstream)"
		} else {
			s += " (downstream)"
		}
	case Latency:
		s += fmt.Sprintf(" (+%v)", f.Latency)
	}
	return s
}

// Schedule limits: a fault starts every MinGap to MaxGap after the previous one started,
// and lasts MinHold to at most MaxHold and 60 % of the gap after it, so that it is
// healed before the next one.
const (
	MinGap  = time.Second
	MaxGap  = 4 * time.Second
	MinHold = 100 * time.Millisecond
	MaxHold = 2 * time.Second
)

// Schedule is the fault schedule of seed for a fault loop of length d: the same seed and
// d give the same schedule, on every machine (math/rand/v2's PCG). Faults start from
// MinGap to MaxGap apart, the first one MinGap to MaxGap after the start; each kind is
// equally likely; the node of a proxy or freeze fault is node 1 (the primary) 60 % of
// the time, node 2 30 % and node 3 10 %; latency spikes add 50 ms to 1.5 s (readTimeout
// is 1 s, so some sessions time out).
func Schedule(seed uint64, d time.Duration) []Fault {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out []Fault
	gap := func() time.Duration { return MinGap + time.Duration(r.Int64N(int64(MaxGap-MinGap))) }
	at := gap()
	for at < d {
		next := gap() // to the next fault: this one is healed before it
		maxHold := min(MaxHold, next*6/10)
		f := Fault{
			At:   at.Round(time.Millisecond),
			Kind: Kind(r.IntN(int(numKinds))),
			Hold: (MinHold + time.Duration(r.Int64N(int64(maxHold-MinHold)))).Round(time.Millisecond),
		}
		switch p := r.IntN(10); {
		case p < 6:
			f.Node = 1
		case p < 9:
			f.Node = 2
		default:
			f.Node = 3
		}
		if f.Kind == Kill || f.Kind == ReadOnly {
			f.Node = 1
		}
		f.Upstream = r.IntN(2) == 0
		if f.Kind != Reset {
			f.Upstream = false
		}
		if f.Kind == Latency {
			f.Latency = time.Duration(50+r.IntN(1451)) * time.Millisecond
		}
		out = append(out, f)
		at += next
	}
	return out
}

// Digest is a short hash of a schedule, printed with the summary so that two runs can be
// seen to have had the same one.
func Digest(s []Fault) string {
	h := fnv.New32a()
	for _, f := range s {
		fmt.Fprintf(h, "%d %v;", f.At, f)
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// countKinds returns "kill:2,freeze:1,..." over every kind, in kind order.
func countKinds(n [numKinds]int) string {
	parts := make([]string, numKinds)
	for k := range numKinds {
		parts[k] = fmt.Sprintf("%s:%d", k, n[k])
	}
	return strings.Join(parts, ",")
}
