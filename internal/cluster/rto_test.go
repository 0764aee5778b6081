package cluster

import (
	"testing"
	"time"
)

// The estimator's arithmetic, RFC 6298 by hand: each expected value is worked out in the
// comment next to it.
func TestRTOEstimator(t *testing.T) {
	const (
		initial = 500 * time.Millisecond
		ceiling = 5 * time.Second
		ms      = time.Millisecond
	)
	var e rtoEstimator
	check := func(what string, want time.Duration) {
		t.Helper()
		if got := e.timeout(initial, ceiling); got != want {
			t.Fatalf("%s: timeout %v, want %v (srtt %v, rttvar %v, backoff %d)", what, got, want, e.srtt, e.rttvar, e.backoff)
		}
	}
	check("no sample", initial)
	if w := e.stallWait(); w != 0 {
		t.Fatalf("no sample: stall wait %v, want 0 (the fixed bound applies)", w)
	}
	e.timedOut()
	check("no sample, timed out", 2*initial) // a host never measured gets one doubling, max(initial, 2*initial)
	e.timedOut()
	check("no sample, timed out twice", 2*initial)
	e = rtoEstimator{}

	e.sample(100 * ms) // SRTT 100, RTTVAR 50: 100 + max(50, 200) = 300
	check("first sample 100ms", 300*ms)
	e.sample(200 * ms) // RTTVAR (3*50 + 100)/4 = 62.5, SRTT (7*100 + 200)/8 = 112.5: 112.5 + 250 = 362.5
	check("second sample 200ms", 362500*time.Microsecond)

	e = rtoEstimator{}
	e.sample(time.Millisecond) // SRTT 1, RTTVAR 0.5: 1 + max(50, 2) = 51
	check("first sample 1ms", 51*ms)
	if w := e.stallWait(); w != 226*ms { // 1 + 200 + 25
		t.Fatalf("first sample 1ms: stall wait %v, want 226ms", w)
	}
	e.timedOut() // Karn: no sample; 102
	check("one timeout", 102*ms)
	e.timedOut() // 204
	check("two timeouts", 204*ms)
	e.timedOut() // 408
	check("three timeouts", 408*ms)
	e.timedOut() // 816, capped at max(initial, 2*51) = 500
	check("four timeouts", initial)
	for range 40 {
		e.timedOut()
	}
	check("many timeouts", initial)
	if e.srtt != time.Millisecond || e.samples != 1 {
		t.Fatalf("timeouts changed the estimate: srtt %v, samples %d; Karn's rule takes no sample from them", e.srtt, e.samples)
	}
	e.sample(time.Millisecond) // RTTVAR 0.5 - 0.5/16, SRTT 1: 51, backoff gone
	check("a sample after timeouts", 51*ms)

	// A stall is remembered: RTTVAR rises by a quarter at once and falls by 1/16 per
	// sample, so 10 quick answers later the timeout is still far above the floor (with
	// RFC 6298's quarter both ways it would be back to 60ms).
	e = rtoEstimator{}
	e.sample(time.Millisecond)
	e.sample(200 * ms) // RTTVAR (1.5 + 199)/4 = 50.125, SRTT (7 + 200)/8 = 25.875: 226.375
	check("a 200ms stall", 226375*time.Microsecond)
	for range 10 {
		e.sample(time.Millisecond) // 138.7ms after the 10th (60ms with RFC 6298's quarter)
	}
	if got := e.timeout(initial, ceiling); got < 100*ms {
		t.Fatalf("10 quick answers after a 200ms stall: timeout %v, want it remembered (> 100ms)", got)
	}

	// A steady slow host: RTTVAR decays towards 0 (by 1/16 per sample), the timeout
	// towards SRTT + 50ms.
	e = rtoEstimator{}
	for range 300 {
		e.sample(300 * ms)
	}
	check("300 samples of 300ms", 350*ms)
	if w := e.stallWait(); w != 525*ms { // 300 + 225, less than 3 x 350: the patience rules
		t.Fatalf("300 samples of 300ms: stall wait %v, want 525ms", w)
	}
	e.timedOut() // doubling up to max(initial, 2*350) = 700
	check("steady 300ms, one timeout", 700*ms)
	e.timedOut()
	check("steady 300ms, two timeouts", 700*ms)

	// A host slower than the ceiling: the ceiling.
	e = rtoEstimator{}
	e.sample(4 * time.Second) // 4 + max(0.05, 8) = 12 s
	check("first sample 4s", ceiling)
	e.timedOut()
	check("first sample 4s, timed out", ceiling)

	// A zero round trip (a coarse clock): the margin.
	e = rtoEstimator{}
	e.sample(0)
	check("a zero sample", DefaultProbeMargin)
}
