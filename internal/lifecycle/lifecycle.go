// Package lifecycle decides, once per reconcile, where an application pool
// stands: stopped or running, idle or started, how many workers it runs, what
// its status records and which events to raise. Decide is pure: the AppPool
// controller gives it the pool's spec (resolved by internal/model), the status
// it recorded, the observations the collectors made and the time; it applies
// the decision.
//
// The decision is an ordered chain of small policies, as IIS applies them to
// an application pool: an administrator's stop and start, a restart,
// rapid-fail protection, the CPU monitor, the idle timeout and on-demand
// start, the autoscaler, and the fixed size. A policy may settle the
// decision (a stopped pool runs no workers, whatever the autoscaler says);
// the ones after it then do not run. Worker recycling runs last, on the
// size the chain decided: it adds a replacement while it replaces a worker.
package lifecycle

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
)

// Input is everything a decision reads.
type Input struct {
	// Pool is the pool's spec, resolved; Name and Namespace name it in messages.
	Pool       model.Pool
	Generation int64
	// Status is the status the pool recorded at its last decision.
	Status v1.AppPoolStatus
	// Restart is the restart annotation's value ("" when unset).
	Restart string
	// StartAsked is when a request asked an idle pool to start (the wake
	// annotation; zero when never).
	StartAsked time.Time
	Observed   Observations
	Now        time.Time
}

// Observations are what the collectors saw of the pool.
type Observations struct {
	// Failures are the worker failures within the rapid-fail interval,
	// oldest first.
	Failures []health.Failure
	// CPU is the CPU monitor's latest reading; CPUMonitored is false when
	// no monitor runs.
	CPU          cpu.Reading
	CPUMonitored bool
	// LastActive is when the pool last got a request; ActivityKnown is false
	// without the frontends' statistics (then no pool is known to be quiet).
	LastActive    time.Time
	ActivityKnown bool
	// Scale is the autoscaler's latest recommendation (nil: none yet).
	Scale *Scale
	// CurrentReplicas is the workers the pool's Deployment asks for now (nil:
	// no Deployment yet).
	CurrentReplicas *int32
	// Workers are the pool's worker pods, for recycling.
	Workers []Worker
}

// Scale is a recommendation of the autoscaler and when it was made.
type Scale struct {
	autoscale.Decision
	At time.Time
}

// Decision is where the pool stands.
type Decision struct {
	// Status is the status to record; the controller adds the counts it
	// reads from the pool's Deployment.
	Status v1.AppPoolStatus
	// Stop is why the pool is stopped (nil: it is not).
	Stop *Stop
	// Idle: the pool went idle and runs no workers until a request comes.
	Idle bool
	// Replicas is the workers to run.
	Replicas int32
	Events   []Event
	// Recheck is when to decide again though nothing changed (0: on the
	// next change).
	Recheck time.Duration
	// Restarted: a restart was acted on; the failures and CPU readings
	// observed before it are to be forgotten.
	Restarted bool
	// StartedOnDemand: a request started the idle pool; it counts as
	// activity.
	StartedOnDemand bool
	// Recycle is a worker to mark for recycling (nil: none now); Replicas
	// counts its replacement.
	Recycle *Recycle
}

// Stop is a reason and a message a person can act on.
type Stop struct {
	Reason, Message string
}

// Event is an event to record on the pool.
type Event struct {
	Type, Reason, Action, Message string
}

// Runtime is the state the renderers take besides the spec.
func (d Decision) Runtime() model.Runtime {
	return model.Runtime{Stopped: d.Stop != nil, Idle: d.Idle, Replicas: d.Replicas}
}

// policy is one link of the chain; it returns true when it settled the
// decision.
type policy func(in Input, d *Decision) (settled bool)

// chain is the order IIS applies them in.
var chain = []policy{administrator, restart, rapidFail, cpuLimit, idle, autoscaling, fixedSize}

// Decide runs the chain, then recycling on the size it decided.
func Decide(in Input) Decision {
	d := Decision{Status: *in.Status.DeepCopy()}
	for _, p := range chain {
		if p(in, &d) {
			break
		}
	}
	recycling(in, &d)
	return d
}

// condition is a condition of the pool's current generation.
func condition(in Input, condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation}
}

// Stopped: the pool's status records it stopped (by a policy or an
// administrator); its routes answer 503, or cut in L4.
func Stopped(status v1.AppPoolStatus) bool { return status.Phase == v1.PoolStopped }

// cannotStartReasons are the Ready reasons that say no worker of the pool
// can start until someone mends the cause. RolloutStalled is not one: the
// old workers still serve.
var cannotStartReasons = map[string]bool{
	v1.ReasonImagePullFailed: true, v1.ReasonContainerCannotStart: true, v1.ReasonStartupCheckFailed: true,
	v1.ReasonUnschedulable: true, v1.ReasonPodCreateFailed: true, v1.ReasonInvalidReference: true, v1.ReasonInvalidSpec: true,
}

// CannotStart: the pool wants workers (it is neither idle nor stopped) and
// its status, for its current generation, says they cannot start. A
// request waiting for one would wait in vain.
func CannotStart(generation int64, status v1.AppPoolStatus) bool {
	if status.IdleSince != nil || Stopped(status) {
		return false
	}
	ready := meta.FindStatusCondition(status.Conditions, v1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionFalse && ready.ObservedGeneration == generation && cannotStartReasons[ready.Reason]
}

// Recorded is the runtime state a pool's status records, for those that
// render a pool without deciding for it (the frontends' routes).
func Recorded(p model.Pool, status v1.AppPoolStatus) model.Runtime {
	rt := model.Runtime{Stopped: Stopped(status), Idle: status.IdleSince != nil, Replicas: v1.DefaultPoolReplicas}
	if p.Replicas != nil {
		rt.Replicas = *p.Replicas
	}
	return rt
}
