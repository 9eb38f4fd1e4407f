package main

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// The collector's heap goal is the live heap times (1 + GOGC/100). serve
// runs with GOGC=400, but its live heap under full load is only 3–6 MB, so
// the goal is 15–30 MB and the collector runs about eight times a second
// at 2,500 messages/s, each cycle costing 5–7 ms of CPU. A heap floor keeps
// the goal at least gcFloor (at most half the memory limit): while the live
// heap is small, GOGC is raised so that live × (1 + GOGC/100) reaches the
// floor; once the live heap is large enough, GOGC=400 applies as before.
// The memory limit is unchanged and still makes the collector run earlier
// near it.
const (
	gcPercent   = 400
	gcFloor     = 64 << 20
	gcFloorTick = 100 * time.Millisecond
)

// tuneGC sets GOGC=400 unless GOGC is set, and then keeps the heap floor
// until ctx ends.
func tuneGC(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	go keepHeapFloor(ctx, gcFloor, gcFloorTick)
}

// heapFloorKeepers counts the keepHeapFloor loops running (tests run
// several servers in one process; each keeps the same floor).
var heapFloorKeepers atomic.Int32

// keepHeapFloor re-reads the live heap every tick and sets GOGC for it,
// until ctx ends; the last keeper to end leaves GOGC=400 behind.
func keepHeapFloor(ctx context.Context, floor uint64, tick time.Duration) {
	heapFloorKeepers.Add(1)
	defer func() {
		// The last one to stop puts GOGC=400 back; until then the others
		// keep their floor.
		if heapFloorKeepers.Add(-1) == 0 {
			debug.SetGCPercent(gcPercent)
		}
	}()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	value := func(i int) uint64 {
		if sample[i].Value.Kind() == metrics.KindUint64 {
			return sample[i].Value.Uint64()
		}
		return 0
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		metrics.Read(sample)
		live, gogc, limit := value(0), value(1), value(2)
		// Compared with what the runtime holds, not with what this loop
		// set last: another keeper (tests run several servers in one
		// process) may have stopped and put GOGC=400 back.
		if p := floorPercent(live, min(floor, limit/2)); uint64(p) != gogc {
			debug.SetGCPercent(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// floorPercent is the least GOGC, in steps of 100 and never below
// gcPercent, that makes live × (1 + GOGC/100) at least floor. A live heap
// not yet measured (0, before the first cycle ends) gets gcPercent.
func floorPercent(live, floor uint64) int {
	if live == 0 || live >= floor {
		return gcPercent
	}
	times := (floor + live - 1) / live // the goal as a multiple of live, rounded up
	if times-1 > math.MaxInt32/100 {
		return math.MaxInt32
	}
	return int(max((times-1)*100, gcPercent))
}
