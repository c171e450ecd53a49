package lifecycle

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

func worker(name string, age time.Duration) Worker {
	return Worker{Name: name, Started: now.Add(-age), Ready: true}
}

func withRequests(w Worker, n int64) Worker { w.Requests, w.RequestsKnown = n, true; return w }
func withMemory(w Worker, n int64) Worker   { w.MemoryBytes, w.MemoryKnown = n, true; return w }
func marked(w Worker, r v1.RecycleReason) Worker {
	w.Recycling = r
	return w
}
func notReady(w Worker) Worker { w.Ready = false; return w }
func leaving(w Worker) Worker  { w.Leaving = true; return w }

func TestWorkerRecycling(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// now is 18:00 UTC, 19:00 in Berlin.
	at1830Berlin := &model.Schedule{Times: []int{18*60 + 30}, Location: berlin}
	periodic := model.Recycling{Interval: 29 * time.Hour}
	for _, tt := range []struct {
		name         string
		recycling    model.Recycling
		workers      []Worker
		wantRecycle  string // worker marked now ("": none)
		wantReason   v1.RecycleReason
		wantReplicas int32
	}{
		{"a worker younger than the interval keeps running", periodic,
			[]Worker{worker("a", 28*time.Hour), worker("b", time.Hour)}, "", "", 2},
		{"a worker past the interval is recycled with one worker more for its replacement", periodic,
			[]Worker{worker("a", 30*time.Hour), worker("b", 29*time.Hour+time.Minute)}, "a", v1.RecycleReasonInterval, 3},
		{"an interval of 0s never recycles", model.Recycling{},
			[]Worker{worker("a", 300*time.Hour), worker("b", 300*time.Hour)}, "", "", 2},
		{"a worker that served its request limit is recycled", model.Recycling{Requests: 10000},
			[]Worker{withRequests(worker("a", time.Hour), 9999), withRequests(worker("b", time.Hour), 10000)}, "b", v1.RecycleReasonRequests, 3},
		{"a worker over its memory limit is recycled before an older one past its interval",
			model.Recycling{Interval: time.Hour, MemoryBytes: 256 << 20},
			[]Worker{worker("a", 2*time.Hour), withMemory(worker("b", time.Minute), 300<<20)}, "b", v1.RecycleReasonMemory, 3},
		{"a worker within its memory limit keeps running", model.Recycling{MemoryBytes: 256 << 20},
			[]Worker{withMemory(worker("a", time.Hour), 200<<20), withMemory(worker("b", time.Hour), 256<<20)}, "", "", 2},
		{"unknown figures recycle nothing", model.Recycling{MemoryBytes: 1, Requests: 1},
			[]Worker{worker("a", time.Hour), worker("b", time.Hour)}, "", "", 2},
		{"a worker started before the scheduled time in its time zone is recycled", model.Recycling{Schedule: at1830Berlin},
			[]Worker{worker("a", 10*time.Minute), worker("b", 2*time.Hour)}, "b", v1.RecycleReasonSchedule, 3},
		{"workers started after the scheduled time keep running", model.Recycling{Schedule: at1830Berlin},
			[]Worker{worker("a", 10*time.Minute), worker("b", 20*time.Minute)}, "", "", 2},
		{"a scheduled time more than an hour ago starts no recycle",
			model.Recycling{Schedule: &model.Schedule{Times: []int{16 * 60}, Location: time.UTC}},
			[]Worker{worker("a", 5*time.Hour), worker("b", 5*time.Hour)}, "", "", 2},
		{"of workers started in the same second the first by name is recycled first", periodic,
			[]Worker{worker("b", 30*time.Hour), worker("a", 30*time.Hour)}, "a", v1.RecycleReasonInterval, 3},
		{"no recycle starts while a worker is not Ready", periodic,
			[]Worker{worker("a", 30*time.Hour), notReady(worker("b", 30*time.Hour))}, "", "", 2},
		{"a marked worker keeps its replacement until the replacement is Ready", periodic,
			[]Worker{marked(worker("a", 30*time.Hour), v1.RecycleReasonInterval), worker("b", 30*time.Hour), notReady(worker("c", 0))}, "", "", 3},
		{"once the replacement is Ready the pool returns to its size, removing the marked worker", periodic,
			[]Worker{marked(worker("a", 30*time.Hour), v1.RecycleReasonInterval), worker("b", 30*time.Hour), worker("c", time.Second)}, "", "", 2},
		{"the next worker is recycled once the previous one is leaving", periodic,
			[]Worker{leaving(marked(worker("a", 30*time.Hour), v1.RecycleReasonInterval)), worker("b", 30*time.Hour), worker("c", time.Second)}, "b", v1.RecycleReasonInterval, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), Recycling: tt.recycling}
			d := Decide(Input{Pool: pool, Status: v1.AppPoolStatus{Phase: v1.PoolRunning}, Observed: Observations{Workers: tt.workers}, Now: now})
			got, reason := "", v1.RecycleReason("")
			if d.Recycle != nil {
				got, reason = d.Recycle.Worker, d.Recycle.Reason
			}
			if got != tt.wantRecycle || reason != tt.wantReason || d.Replicas != tt.wantReplicas {
				t.Fatalf("recycle %q (%s), %d workers; want %q (%s), %d", got, reason, d.Replicas, tt.wantRecycle, tt.wantReason, tt.wantReplicas)
			}
			if tt.wantRecycle == "" {
				return
			}
			if len(d.Status.LastRecycles) != 1 || d.Status.LastRecycles[0].Reason != tt.wantReason || d.Status.LastRecycles[0].Worker != tt.wantRecycle {
				t.Errorf("status.lastRecycles = %+v", d.Status.LastRecycles)
			}
			if len(d.Events) != 1 || d.Events[0].Reason != v1.ReasonRecycled {
				t.Errorf("events = %+v, want one Recycled", d.Events)
			}
		})
	}
}

func TestRecyclingLeavesStoppedAndIdlePoolsAlone(t *testing.T) {
	old := []Worker{worker("a", 30*time.Hour)}
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](1), Recycling: model.Recycling{Interval: time.Hour}, AdministratorStopped: true}
	d := Decide(Input{Pool: pool, Observed: Observations{Workers: old}, Now: now})
	if d.Recycle != nil || d.Replicas != 0 {
		t.Errorf("a stopped pool: recycle %+v, %d workers", d.Recycle, d.Replicas)
	}
}

func TestQuickRecyclesInARowForTwiceThePoolAreReportedAsALoop(t *testing.T) {
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), Recycling: model.Recycling{MemoryBytes: 100 << 20}}
	status := v1.AppPoolStatus{Phase: v1.PoolRunning}
	// Each replacement is over the limit a minute after it started.
	workersAt := func(at time.Time) []Worker {
		return []Worker{
			{Name: "a", Started: at.Add(-time.Minute), Ready: true, MemoryBytes: 200 << 20, MemoryKnown: true},
			{Name: "b", Started: at.Add(-time.Minute), Ready: true, MemoryBytes: 200 << 20, MemoryKnown: true},
		}
	}
	for i := range 4 {
		at := now.Add(time.Duration(i) * time.Minute)
		d := Decide(Input{Pool: pool, Status: status, Observed: Observations{Workers: workersAt(at)}, Now: at})
		if d.Recycle == nil {
			t.Fatalf("recycle %d: none", i+1)
		}
		status = d.Status
	}
	if got := status.LastRecycles[0].InARow; got != 4 {
		t.Fatalf("inARow = %d, want 4", got)
	}
	d := Decide(Input{Pool: pool, Status: status, Observed: Observations{Workers: workersAt(now.Add(4 * time.Minute))}, Now: now.Add(4 * time.Minute)})
	if d.Recycle != nil || d.Replicas != 2 {
		t.Fatalf("a loop: recycle %+v, %d workers; want none, 2", d.Recycle, d.Replicas)
	}
	c := meta.FindStatusCondition(d.Status.Conditions, v1.ConditionRecycling)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonRecyclingLoop {
		t.Fatalf("Recycling condition = %+v, want False RecyclingLoop", c)
	}
	if len(d.Events) != 1 || d.Events[0].Reason != v1.ReasonRecyclingLoop {
		t.Errorf("events = %+v, want one RecyclingLoop warning", d.Events)
	}
	// The window after the last recycle passes: recycling resumes, the
	// condition goes.
	after := now.Add(3*time.Minute + recycleLoopWindow)
	d = Decide(Input{Pool: pool, Status: d.Status, Observed: Observations{Workers: workersAt(after)}, Now: after})
	if d.Recycle == nil || meta.FindStatusCondition(d.Status.Conditions, v1.ConditionRecycling) != nil {
		t.Errorf("after the window: recycle %+v, conditions %v", d.Recycle, d.Status.Conditions)
	}
	if d.Status.LastRecycles[0].InARow != 1 {
		t.Errorf("inARow after the window = %d, want 1", d.Status.LastRecycles[0].InARow)
	}
}

func TestARecycleIsDueAgainAtTheNextScheduledTimeOrWorkerAge(t *testing.T) {
	for _, tt := range []struct {
		name      string
		recycling model.Recycling
		workers   []Worker
		want      time.Duration
	}{
		{"the oldest worker reaching the interval", model.Recycling{Interval: 29 * time.Hour},
			[]Worker{worker("a", 28*time.Hour), worker("b", time.Hour)}, time.Hour},
		{"the next scheduled time", model.Recycling{Schedule: &model.Schedule{Times: []int{18*60 + 30}, Location: time.UTC}},
			[]Worker{worker("a", time.Minute)}, 30 * time.Minute},
		{"the next reading of a limit", model.Recycling{Requests: 1000}, []Worker{worker("a", time.Minute)}, limitRecheck},
		{"never, without recycling", model.Recycling{}, []Worker{worker("a", time.Minute)}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := model.Pool{Name: "shop", Replicas: ptr.To(int32(len(tt.workers))), Recycling: tt.recycling}
			d := Decide(Input{Pool: pool, Status: v1.AppPoolStatus{Phase: v1.PoolRunning}, Observed: Observations{Workers: tt.workers}, Now: now})
			if d.Recheck != tt.want {
				t.Errorf("recheck = %s, want %s", d.Recheck, tt.want)
			}
		})
	}
}

func TestScheduledTimesAreReadInTheSchedulesTimeZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	s := model.Schedule{Times: []int{180, 23*60 + 30}, Location: ny}
	// 2026-11-25 12:00 UTC is 07:00 in New York: the last time was 03:00
	// there (08:00 UTC), the next is 23:30 there (04:30 UTC the day after).
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if got, want := lastScheduled(s, now), time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("last = %s, want %s", got.UTC(), want)
	}
	if got, want := nextScheduled(s, now), time.Date(2026, 11, 26, 4, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next = %s, want %s", got.UTC(), want)
	}
	// Just after midnight the last time is yesterday's.
	early := time.Date(2026, 11, 25, 5, 10, 0, 0, time.UTC) // 00:10 in New York
	if got, want := lastScheduled(s, early), time.Date(2026, 11, 25, 4, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("last after midnight = %s, want %s", got.UTC(), want)
	}
}

func TestAWorkerThatRanAWhileBeforeItsLimitStartsNoLoopCount(t *testing.T) {
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](1), Recycling: model.Recycling{Requests: 1000}}
	d := Decide(Input{Pool: pool, Status: v1.AppPoolStatus{Phase: v1.PoolRunning},
		Observed: Observations{Workers: []Worker{withRequests(worker("a", 30*time.Minute), 1000)}}, Now: now})
	if d.Recycle == nil || d.Status.LastRecycles[0].InARow != 0 {
		t.Fatalf("recycle %+v, inARow %d; want a recycle that is not quick (0)", d.Recycle, d.Status.LastRecycles[0].InARow)
	}
}
