package cluster

// The probe timeout of each host, derived from its own probe round trips as TCP derives
// its retransmission timeout (RFC 6298): a smoothed round-trip time and its mean
// deviation, the timeout their sum with four deviations (at least a margin), within a
// ceiling;
// Karn's rule (a probe that timed out gives no sample), and the timeout doubled after
// each timed-out probe until a probe passes. And the least a probe waits for its answer
// (stallWait): the smoothed round trip plus a stall an alive host may have, whatever its
// past round trips, as TCP's minimum RTO keeps a quiet path from timing out on a spike.

import "time"

// rtoEstimator is one host's estimate of its probe round trips. The zero value has no
// sample yet. It is guarded by its host's lock.
type rtoEstimator struct {
	srtt, rttvar time.Duration // RFC 6298's SRTT and RTTVAR, valid when samples > 0
	samples      int           // round trips measured since the estimate began
	backoff      int           // consecutive timed-out probes since the last sample
	paused       bool          // the last probe timed out late and was not counted (probe.go)
}

// sample adds r, the duration of a probe round trip that passed (RFC 6298 2.2, 2.3):
// the first one sets SRTT to r and RTTVAR to r/2; each later one moves RTTVAR a quarter
// of the way to |SRTT-r| when that is larger, and 1/DefaultProbeVarianceDecay of the
// way when it is smaller, and then SRTT an eighth of the way to r. It ends a backoff.
//
// RFC 6298 moves RTTVAR a quarter of the way both ways; then a host whose answers stall
// now and then (a CPU-starved server) has its deviation forgotten within a second of
// probes, and its next stall is taken for a dead host. As in Linux's TCP (whose RTTVAR
// follows the largest recent deviation and falls only gradually), the deviation rises at
// once and falls slowly: a host's stalls count for many probes.
func (e *rtoEstimator) sample(r time.Duration) {
	r = max(r, 0)
	if e.samples == 0 {
		e.srtt, e.rttvar = r, r/2
	} else {
		d := e.srtt - r
		if d < 0 {
			d = -d
		}
		if d > e.rttvar {
			e.rttvar = (3*e.rttvar + d) / 4
		} else {
			e.rttvar -= (e.rttvar - d) / DefaultProbeVarianceDecay
		}
		e.srtt = (7*e.srtt + r) / 8
	}
	e.samples++
	e.backoff = 0
}

// timedOut records a probe that timed out: no sample (Karn's rule), and the next
// timeout is twice as long (RFC 6298 5.5), up to the cap of timeout.
func (e *rtoEstimator) timedOut() {
	if e.backoff < 30 { // 2^30 times any floor is beyond every ceiling
		e.backoff++
	}
}

// base returns the timeout without backoff: SRTT + max(DefaultProbeMargin,
// DefaultProbeVarianceFactor*RTTVAR), at most ceiling (RFC 6298 2.3, with the margin in
// the place of the clock granularity G: it is also the floor), or initial before the
// first sample.
func (e *rtoEstimator) base(initial, ceiling time.Duration) time.Duration {
	if e.samples == 0 {
		return initial
	}
	return min(e.srtt+max(DefaultProbeMargin, DefaultProbeVarianceFactor*e.rttvar), ceiling)
}

// stallWait returns the least a probe of a measured host waits for its answer: SRTT +
// DefaultMaxStall + DefaultStallMargin, or 0 before the first sample (the fixed bound
// applies then). A host whose round trips have been steady has a small RTTVAR, so the
// deviation-aware timeout alone (DefaultProbePatience x RTO, 153 ms for a 1 ms host)
// would take its first stall, a step of its latency or a spike of jitter (an fsync
// stall, a noisy neighbour: alive and answering, late) for a death; this floor is what
// tells "answers late" from "does not answer", as Linux's TCP keeps a minimum RTO of 200
// ms under RFC 6298's formula.
func (e *rtoEstimator) stallWait() time.Duration {
	if e.samples == 0 {
		return 0
	}
	return e.srtt + DefaultMaxStall + DefaultStallMargin
}

// timeout returns the bound of the next probe round trip: the base (see base), doubled
// once per timed-out probe since the last sample, but never doubled beyond
// max(initial, 2*base) nor beyond ceiling. A backed-off probe thus never waits longer
// than the fixed bound probes had before this estimator (initial), unless the host's own
// round trips call for more: a host that stopped answering costs every monitor round
// little, and one whose round trips are slow gets one doubling.
func (e *rtoEstimator) timeout(initial, ceiling time.Duration) time.Duration {
	b := e.base(initial, ceiling)
	if e.backoff == 0 {
		return b
	}
	limit := min(max(initial, 2*b), ceiling)
	d := b
	for i := 0; i < e.backoff && d < limit; i++ {
		d *= 2
	}
	return max(min(d, limit), b)
}
