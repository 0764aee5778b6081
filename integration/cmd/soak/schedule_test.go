package main

import (
	"reflect"
	"testing"
	"time"
)

// The same seed gives the same schedule; another seed another one.
func TestScheduleSameSeedSameSchedule(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42, 1 << 63} {
		a, b := Schedule(seed, 5*time.Minute), Schedule(seed, 5*time.Minute)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two schedules differ:\n%v\n%v", seed, a, b)
		}
		if Digest(a) != Digest(b) {
			t.Fatalf("seed %d: digests differ", seed)
		}
		if c := Schedule(seed+1, 5*time.Minute); reflect.DeepEqual(a, c) || Digest(a) == Digest(c) {
			t.Fatalf("seeds %d and %d give the same schedule", seed, seed+1)
		}
		// A shorter loop gets a prefix of the same schedule.
		short := Schedule(seed, time.Minute)
		if len(short) == 0 || !reflect.DeepEqual(short, a[:len(short)]) {
			t.Fatalf("seed %d: the 1-minute schedule is not a prefix of the 5-minute one", seed)
		}
	}
}

// A golden schedule: the generator (and math/rand/v2's PCG under it) must not change
// silently, or a printed seed would no longer reproduce a run.
func TestScheduleGolden(t *testing.T) {
	got := Schedule(7, 10*time.Second)
	if d := Digest(got); d != goldenDigest7 {
		t.Fatalf("Schedule(7, 10s) digest = %s, want %s: %v", d, goldenDigest7, got)
	}
}

const goldenDigest7 = "88b3c809" // blackhole node2 773ms, blackhole node2 1.11s, reset node2 572ms (downstream), refuse node2 492ms

// Every fault lies within the limits, one at a time: each is healed before the next
// starts, and every kind and node occurs.
func TestScheduleLimits(t *testing.T) {
	var kinds [numKinds]int
	nodes := map[int]int{}
	for seed := range uint64(20) {
		s := Schedule(seed, 2*time.Minute)
		prev := time.Duration(0)
		for i, f := range s {
			gap := f.At - prev
			if gap < MinGap-time.Millisecond || gap > MaxGap+time.Millisecond {
				t.Fatalf("seed %d fault %d: %v after the previous one", seed, i, gap)
			}
			if f.Hold < MinHold-time.Millisecond || f.Hold > MaxHold {
				t.Fatalf("seed %d fault %d: hold %v", seed, i, f.Hold)
			}
			if i+1 < len(s) && f.Hold > (s[i+1].At-f.At)*6/10+time.Millisecond {
				t.Fatalf("seed %d fault %d not healed before the next", seed, i)
			}
			if f.At >= 2*time.Minute {
				t.Fatalf("seed %d fault %d at %v, after the end", seed, i, f.At)
			}
			if (f.Kind == Kill || f.Kind == ReadOnly) && f.Node != 1 {
				t.Fatalf("seed %d fault %d: %v not on the primary", seed, i, f)
			}
			if f.Kind == Latency && (f.Latency < 50*time.Millisecond || f.Latency > 1500*time.Millisecond) {
				t.Fatalf("seed %d fault %d: latency %v", seed, i, f.Latency)
			}
			kinds[f.Kind]++
			nodes[f.Node]++
			prev = f.At
		}
	}
	for k := range numKinds {
		if kinds[k] == 0 {
			t.Errorf("no %v fault in 20 schedules", k)
		}
	}
	for n := 1; n <= 3; n++ {
		if nodes[n] == 0 {
			t.Errorf("no fault on node %d in 20 schedules", n)
		}
	}
}
