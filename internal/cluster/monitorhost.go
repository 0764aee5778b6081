package cluster

// The monitor's record of each host (monitorHost): what the probes alone decide (the
// verdict down, the runs of failed and passed probes, the estimator of the probe timeout,
// the last probe's latency, the request to probe again at once) and the request to close
// the host's connections once it is down (abortDue, which a walk that left the host after
// a failure also sets). It is written only by the monitor's steps (probe.go) and by the
// few methods here that other mechanisms call; every other mechanism reads it through
// these methods, or through health.
//
// Lock order: a monitorHost has a mutex of its own. It may be taken while its host's
// hostState.mu is held (health, and the steps that change both at once: a probe's
// transition, a refusal that ends a run of passed probes, a same-host check's look at
// the host), never the reverse: no method here takes a hostState's lock or calls out of
// the monitor's record.

import (
	"sync"
	"time"
)

// monitorHost is what the monitor knows of one host: part of its hostState (h.mon),
// under its own lock.
type monitorHost struct {
	mu        sync.Mutex
	down      bool          // probes declared it down (probing on): walks skip it
	failSince time.Time     // first of the current run of failed probes (zero: last probe passed)
	okSince   time.Time     // first of the current run of passed probes (zero: last probe failed)
	again     bool          // its last probe timed out before it was declared down, or inconclusively: the next at once
	abortDue  bool          // a walk moved the pool off it after a failure: abort it if probes declare it down
	probeLat  time.Duration // how long its last passed probe took
	rto       rtoEstimator  // its probe round trips, the bound of its next probe (rto.go)
	stateAt   time.Time     // when a probe last read the server's state (ReadState)
}

// usualAnswer is how long the host's answers usually take: its probes' smoothed round
// trip plus DefaultProbeVarianceFactor deviations (0 before a probe passed).
func (m *monitorHost) usualAnswer() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rto.samples == 0 {
		return 0
	}
	return m.rto.srtt + DefaultProbeVarianceFactor*m.rto.rttvar
}

// claimStateRead reports whether a probe at now is due to read the host's state (no
// probe has read it since t), and if so records that it reads it now.
func (m *monitorHost) claimStateRead(t time.Time, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stateAt.After(t) {
		return false
	}
	m.stateAt = now
	return true
}

// status reports whether the probes declared the host down, and whether a run of failed
// probes is under way (suspect).
func (m *monitorHost) status() (down, suspect bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down, !m.failSince.IsZero()
}

// isDown reports whether the probes declared the host down.
func (m *monitorHost) isDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down
}

// takeAgain reports whether the host's last probe asked for the next one at once (see
// again) and clears it.
func (m *monitorHost) takeAgain() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.again
	m.again = false
	return a
}

// passedFor reports whether the host's probes have passed without a pause for at least
// d at now, and have not declared it down.
func (m *monitorHost) passedFor(now time.Time, d time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.down && !m.okSince.IsZero() && now.Sub(m.okSince) >= d
}

// passedSince returns the first passed probe of the current run (zero: none).
func (m *monitorHost) passedSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.okSince
}

// endPassRun ends the current run of passed probes: the host's server said it is not
// ready (setReady), and a run starts again when it is.
func (m *monitorHost) endPassRun() {
	m.mu.Lock()
	m.okSince = time.Time{}
	m.mu.Unlock()
}

// latency returns how long the host's last passed probe took.
func (m *monitorHost) latency() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.probeLat
}

// setAbortDue records whether the host's connections are to be closed once the probes
// declare it down: due after a walk left it (leftAfterFailure), not once they were
// closed (abortHost).
func (m *monitorHost) setAbortDue(due bool) {
	m.mu.Lock()
	m.abortDue = due
	m.mu.Unlock()
}

// takeAbortDue reports whether the host's connections are to be closed now: they were
// due and the probes declared it down, which settles it either way.
func (m *monitorHost) takeAbortDue() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	due := m.down && m.abortDue
	if m.down {
		m.abortDue = false
	}
	return due
}

// failed records a failed probe that started at start and ended at now in the run of
// failed probes and the estimator (see failRun), and reports whether the run has
// lasted failoverDelay (down), or the probe says nothing of the host because this
// process paused (paused). late is how far past its bound a step that timed out
// (timedOut) returned.
func (m *monitorHost) failed(start, now time.Time, failoverDelay time.Duration, timedOut bool, late time.Duration) (down, paused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if timedOut && late > DefaultMaxLocalPause && !m.rto.paused && !m.down {
		// The timeout fired more than DefaultMaxLocalPause late: this process did
		// not run meanwhile (an overloaded machine, a stop of the world), and the
		// answer may be waiting unread. Once in a row, the probe says nothing of the
		// host: it is repeated at once, as Cassandra's failure detector ignores the
		// intervals of its own pauses.
		m.rto.paused = true
		m.again = true
		return false, true
	}
	m.rto.paused = false
	if m.failSince.IsZero() {
		m.failSince = start
	}
	m.okSince = time.Time{}
	down = now.Sub(m.failSince) >= failoverDelay
	if timedOut {
		m.rto.timedOut() // Karn's rule: no sample; the next timeout doubles
		if !down && !m.down {
			m.again = true // TCP's retransmission: at once, not a period later
		}
	}
	return down, false
}

// answeredMeanwhile records a probe that timed out while the host answered other
// sessions of the connector (traffic as evidence): unless the probes already declared
// the host down, it is no failure of the host, takes no sample (Karn's rule) and leaves
// its timeout as it was (a doubled one would delay the verdict on a host that freezes
// next), and the next probe comes at once. It reports whether the probe was so
// discounted.
func (m *monitorHost) answeredMeanwhile() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false
	}
	m.again = true
	return true
}

// declareDown records the verdict of a failed probe's run that lasted failoverDelay:
// down (a host declared down stays so until a probe passes). With abort, a host declared
// down now has its connections closed by decide (replica sessions may be on it).
func (m *monitorHost) declareDown(abort bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.down && abort {
		m.abortDue = true
	}
	m.down = true
}

// passed records a passed probe that started at start and ended at now, with round trip
// rtt: a step of the run of passed probes (none while the host is unfit: a run of
// qualifying probes starts only when its role qualifies again), a sample of the
// estimator, the end of the run of failed probes and of the verdict down.
func (m *monitorHost) passed(unfit bool, start, now time.Time, rtt time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case unfit:
		// Up, but of the wrong role: a run of qualifying probes starts only when the
		// role qualifies again, so a read_only that flaps never draws the pool back.
		m.okSince = time.Time{}
	case m.okSince.IsZero():
		m.okSince = now
	}
	m.failSince = time.Time{}
	m.abortDue = false
	m.probeLat = now.Sub(start)
	m.rto.sample(rtt)
	m.rto.paused = false
	m.down = false
}

// failing reports whether the probes declared the host down or a run of failed probes
// is under way.
func (m *monitorHost) failing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down || !m.failSince.IsZero()
}
