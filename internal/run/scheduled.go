package run

import (
	"container/heap"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/sched"
	"github.com/stampede-load/stampede/internal/vu"
)

// startUser runs a closed-model user. A user that is busy all the time
// (no pace, no think) gets its own goroutine. A user that mostly waits is
// scheduled instead: it is only data in a timer heap while it waits, and a
// worker runs its request steps when they are due. A waiting goroutine
// would keep the stack it grew while sending (8 KB or more, rarely shrunk
// since the request path allocates nothing and so seldom triggers a
// collection), which is most of the memory of thousands of idle users.
func (cd *closedDriver) startUser(cu closedUser) {
	sc := cd.prog.ScenarioFor(cu.u.ID - 1)
	if cd.plan.Load.Pace <= 0 && !sc.HasThink() {
		cd.wg.Add(1)
		go cd.closedLoop(cu)
		return
	}
	cd.schedOnce.Do(cd.startScheduler)
	su := &schedUser{cu: cu, sc: sc, started: time.Now()}
	// Segment looks at the stop between steps (loops, scripts).
	cu.u.SetStop(vu.Stop{Soft: cd.soft, Retire: cu.quit})
	if pace := cd.plan.Load.Pace; pace > 0 {
		// Spread paced users over the first pace period instead of firing
		// every user's first iteration at once: N users with pace P then
		// send N/P requests/s evenly, as the plan means.
		su.started = su.started.Add(time.Duration(phase(cu.u.ID) * float64(pace)))
	}
	su.due, su.next = su.started, su.started
	cd.rec.Active.Add(1)
	cd.waiting.add(su)
}

// schedUser is a waiting closed-model user.
type schedUser struct {
	cu      closedUser
	sc      *vu.Scenario
	started time.Time
	due     time.Time
	next    time.Time // a drawn pace's next iteration start (pace.go)
	iter    int64
	pc      int  // next step; 0 with !inIter starts an iteration
	inIter  bool // between Begin and End
	index   int  // heap position
}

type userHeap []*schedUser

func (h userHeap) Len() int           { return len(h) }
func (h userHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h userHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *userHeap) Push(x any) {
	su := x.(*schedUser)
	su.index = len(*h)
	*h = append(*h, su)
}
func (h *userHeap) Pop() any {
	old := *h
	n := len(old)
	su := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return su
}

// userQueue is the timer heap of waiting users.
type userQueue struct {
	mu   sync.Mutex
	h    userHeap
	wake chan struct{}
}

func (q *userQueue) add(su *schedUser) {
	q.mu.Lock()
	heap.Push(&q.h, su)
	first := su.index == 0
	q.mu.Unlock()
	if first {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// next pops the earliest user if it is due, else says how long to wait.
func (q *userQueue) next(now time.Time) (*schedUser, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return nil, time.Hour
	}
	if d := q.h[0].due.Sub(now); d > 0 {
		return nil, d
	}
	return heap.Pop(&q.h).(*schedUser), 0
}

func (cd *closedDriver) startScheduler() {
	cd.waiting.wake = make(chan struct{}, 1)
	// The dispatcher starts workers (wg.Add) until the run stops; counted
	// in the group itself, it keeps the count above zero while it may add,
	// so the grace period's wg.Wait cannot return before a worker it is
	// starting has begun.
	cd.wg.Add(1)
	go func() {
		defer cd.wg.Done()
		cd.dispatch()
	}()
}

// maxIdleWorkers is how many idle workers the dispatcher keeps. A worker
// holds its goroutine's stack, grown by the request path to 8 KB or more;
// after a burst (a slow stretch of the target, when thousands of requests
// wait at once) they stayed for the rest of the run, most of the memory
// of a run of idle connections that had such a stretch. A new worker
// costs a goroutine's start, about a microsecond.
const maxIdleWorkers = 256

// dispatch hands due users to workers until the run stops starting work.
func (cd *closedDriver) dispatch() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	idle := idleStack[*schedUser]{max: maxIdleWorkers}
	for {
		su, wait := cd.waiting.next(time.Now())
		if su == nil {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-cd.waiting.wake:
			case <-cd.soft:
				idle.closeAll()
				return
			}
			continue
		}
		select {
		case <-cd.soft:
			idle.closeAll()
			return
		default:
		}
		if w := idle.pop(); w != nil {
			w.jobs <- su
			continue
		}
		w := &worker[*schedUser]{jobs: make(chan *schedUser, 1)}
		cd.wg.Add(1)
		w.jobs <- su
		go cd.schedWorker(w, &idle)
	}
}

func (cd *closedDriver) schedWorker(w *worker[*schedUser], idle *idleStack[*schedUser]) {
	defer cd.wg.Done()
	for su := range w.jobs {
		cd.step(su)
		if !idle.push(w) {
			return
		}
	}
}

// step runs a due user up to its next wait and puts it back in the heap.
func (cd *closedDriver) step(su *schedUser) {
	u := su.cu.u
	for {
		select {
		case <-su.cu.quit:
			cd.leave(su)
			return
		case <-cd.soft:
			cd.leave(su)
			return
		default:
		}
		if !su.inIter {
			var intended time.Time
			if cd.plan.Load.PaceDist != nil {
				intended = su.next // pace.go
			} else if pace := cd.plan.Load.Pace; pace > 0 {
				intended = su.started.Add(pace * time.Duration(su.iter))
			}
			if err := u.Begin(su.sc, intended); err != nil {
				cd.handleIterErr(err)
				cd.leave(su)
				return
			}
			su.inIter, su.pc = true, 0
		}
		next, think, end := u.Segment(su.sc, su.pc)
		if !end {
			su.pc = next
			su.due = time.Now().Add(think)
			cd.waiting.add(su)
			return
		}
		u.End()
		su.inIter = false
		su.iter++
		if cd.plan.Load.PaceDist != nil {
			if cd.waitPace(su) { // pace.go
				return
			}
		} else if pace := cd.plan.Load.Pace; pace > 0 {
			if d := sched.PaceDelay(pace, su.iter, time.Since(su.started)); d > 0 {
				su.due = su.started.Add(pace * time.Duration(su.iter))
				cd.waiting.add(su)
				return
			}
		}
	}
}

// leave ends a scheduled user's life in the run.
func (cd *closedDriver) leave(su *schedUser) {
	if su.inIter {
		su.cu.u.End()
		su.inIter = false
	}
	cd.rec.Active.Add(-1)
}
