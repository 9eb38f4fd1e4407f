package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 64 * mib, gcPercent},           // not measured yet
		{64 * mib, 64 * mib, gcPercent},    // at the floor
		{100 * mib, 64 * mib, gcPercent},   // above it
		{20 * mib, 64 * mib, gcPercent},    // 4 × 20 would do, but never below 400
		{4 * mib, 64 * mib, 1500},          // 16 × 4 = 64
		{5_000_000, 64 * mib, 1300},        // 14 × 5 MB ≥ 64 MiB, 13 × would not be
		{1, mib, mib*100 - 100},            // a tiny heap: the floor itself
		{1, 1 << 62, 1<<31 - 1},            // capped at what GOGC holds
		{1, 184467440737095518, 1<<31 - 1}, // where the step would wrap
		{10 * mib, 0, gcPercent},           // no floor (no memory limit room)
		{10 * mib, 50 * mib, gcPercent},    // 5 × 10 = 50: 400 is enough
		{10 * mib, 50*mib + 1, 500},        // one byte more needs the next step
	} {
		got := floorPercent(c.live, c.floor)
		if got != c.want {
			t.Errorf("floorPercent(%d, %d) = %d, want %d", c.live, c.floor, got, c.want)
		}
		if got > gcPercent && got < 1<<31-1 {
			// The step chosen reaches the floor, and the step below does not.
			if goal := c.live * uint64(100+got) / 100; goal < c.floor {
				t.Errorf("live %d with GOGC=%d: goal %d under the floor %d", c.live, got, goal, c.floor)
			}
			if goal := c.live * uint64(got) / 100; goal >= c.floor {
				t.Errorf("live %d: GOGC=%d would have reached the floor", c.live, got-100)
			}
		}
	}
}

// gogc reads the collector's GOGC as the runtime holds it.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestKeepHeapFloorRaisesGOGCForASmallHeap(t *testing.T) {
	floorTest(t)
	// This test binary's live heap is a few MB: a floor of 256 MiB needs a
	// GOGC far above 400.
	stop := startHeapFloor(256 << 20)
	if !gogcRaised() {
		t.Fatalf("GOGC stayed at %d with a floor of 256 MiB", gogc())
	}
	stop()
	if got := gogc(); got != gcPercent {
		t.Errorf("after the floor stopped GOGC is %d, want %d back", got, gcPercent)
	}

	// The floor is at most half the memory limit: with a 64 KiB limit it
	// is 32 KiB, which any live heap passes.
	debug.SetMemoryLimit(64 << 10)
	stop = startHeapFloor(256 << 20)
	time.Sleep(20 * time.Millisecond)
	if got := gogc(); got != gcPercent {
		t.Errorf("with a 64 KiB memory limit GOGC is %d, want %d", got, gcPercent)
	}
	stop()
}

// Two servers in one process each keep the floor: when one stops, the
// other's stays (the last to stop puts GOGC=400 back).
func TestHeapFloorOutlivesAnotherKeeper(t *testing.T) {
	floorTest(t)
	stopA, stopB := startHeapFloor(256<<20), startHeapFloor(256<<20)
	if !gogcRaised() {
		t.Fatal("two keepers: GOGC not raised")
	}
	stopA()
	time.Sleep(20 * time.Millisecond) // twenty of B's ticks
	if got := gogc(); got <= gcPercent {
		t.Errorf("one keeper stopped, one running: GOGC %d", got)
	}
	stopB()
	if got := gogc(); got != gcPercent {
		t.Errorf("both stopped: GOGC %d, want %d", got, gcPercent)
	}
}

// floorTest starts a test of the floor from GOGC=400 and a 1 GiB memory
// limit, once the floors other tests of this process left running have
// ended, and puts both settings back after it; the live heap is measured
// at the end of a cycle, so one is run.
func floorTest(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); heapFloorKeepers.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d heap floors still running", heapFloorKeepers.Load())
		}
	}
	oldPercent := debug.SetGCPercent(gcPercent)
	oldLimit := debug.SetMemoryLimit(1 << 30)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	runtime.GC()
}

// startHeapFloor runs keepHeapFloor with floor, ticking every millisecond;
// stop ends it and waits for it.
func startHeapFloor(floor uint64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { keepHeapFloor(ctx, floor, time.Millisecond); close(stopped) }()
	return func() { cancel(); <-stopped }
}

// gogcRaised waits up to 10 s for GOGC to go above 400.
func gogcRaised() bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if gogc() > gcPercent {
			return true
		}
	}
	return false
}

func TestTuneGCLeavesAnExplicitGOGC(t *testing.T) {
	floorTest(t)
	debug.SetGCPercent(150)
	t.Setenv("GOGC", "150")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuneGC(ctx)
	time.Sleep(3 * gcFloorTick)
	if got := gogc(); got != 150 || heapFloorKeepers.Load() != 0 {
		t.Errorf("GOGC=150 in the environment: the runtime has %d, %d heap floors run", got, heapFloorKeepers.Load())
	}
}
