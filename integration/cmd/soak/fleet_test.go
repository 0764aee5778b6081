package main

import (
	"strings"
	"testing"
	"time"
)

// TestMergeCountsInstanceViolations: what an instance of a fleet soak found (its
// violations, calls, errors, longest calls) counts in the parent's result, so that a
// violation inside an instance fails the run.
func TestMergeCountsInstanceViolations(t *testing.T) {
	r := newResult(1, false, time.Second)
	r.instances = 2
	r.merge(&instanceReport{Instance: 0, Calls: 10, Errs: map[string]int{"context": 1},
		Longest: map[string]time.Duration{"pool": time.Second}, LongestWhy: map[string]string{"pool": "write 1"}})
	r.merge(&instanceReport{Instance: 1, Calls: 5, Errs: map[string]int{"context": 2},
		Viol:    map[string]int{"ack-missing": 2},
		Details: []string{"VIOLATION ack-missing: write 7 was acknowledged and is not on the primary"},
		Longest: map[string]time.Duration{"pool": 2 * time.Second}, LongestWhy: map[string]string{"pool": "write 2"}})
	if got := r.violations(); got != 2 {
		t.Errorf("violations = %d, want 2 (instance 1's)", got)
	}
	if r.calls != 15 || r.errs["context"] != 3 {
		t.Errorf("calls %d, context errors %d: want 15 and 3", r.calls, r.errs["context"])
	}
	if r.longest["pool"] != 2*time.Second || !strings.HasPrefix(r.longestWhy["pool"], "instance 1: ") {
		t.Errorf("longest pool call %v (%q): want instance 1's 2s", r.longest["pool"], r.longestWhy["pool"])
	}
	if len(r.details) != 1 || !strings.HasPrefix(r.details[0], "instance 1: ") {
		t.Errorf("details %q: want instance 1's, named", r.details)
	}
	if s := r.summary(); !strings.Contains(s, "instances=2") || !strings.Contains(s, "violations=ack-missing:2") {
		t.Errorf("summary %q: want instances=2 and violations=ack-missing:2", s)
	}
}
