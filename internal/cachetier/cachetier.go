// Package cachetier decides, once per reconcile, what becomes of a
// CachePolicy's cache tier and of the entries it holds. Decide is pure: the
// CachePolicy controller gives it the pools behind the tier (those of the
// routes that name the policy, each with its content revision), the purge
// annotation, the status the policy recorded, what the operator observed and
// the time; it applies the decision: it removes or serves the tier, makes the
// purges through the tier's agents, records them in the status, raises their
// events and looks again when told.
//
// The decision goes in this order:
//  1. retire: no route names the policy. The frontends stop routing through
//     the tier a moment after their farm changed, so the tier keeps serving
//     for RemovalGrace from when the operator first saw it unreferenced, and
//     is removed then. Nothing else is decided for an unreferenced tier.
//  2. serve: the tier runs for the pools behind it.
//  3. the purge asked for with the webfarm.dev/purge annotation: a token the
//     status has not answered yet purges every entry.
//  4. each pool's content: a pool seen for the first time is recorded; a new
//     revision is noted, and the pool's entries are purged once the pool
//     serves it (see ConfigMapSettle).
package cachetier

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// RemovalGrace is how long an unreferenced tier keeps serving: far longer
// than the frontends take to apply their new routes.
const RemovalGrace = 10 * time.Second

// Content changes reach a tier's entries this way: the operator notes each
// pool's content revision, and when the revision changes it purges that
// pool's entries once the pool serves the new content:
//   - a new pod template (image, content image, config): when the pool's
//     rollout is complete;
//   - new ConfigMap data: kubelet updates the files in running workers within
//     its sync period, so ConfigMapSettle after the change was noticed, which
//     the operator looks for every ContentPoll.
const (
	ConfigMapSettle = 90 * time.Second
	ContentPoll     = 30 * time.Second
)

// Input is everything a decision reads.
type Input struct {
	// Pools are the pools behind the tier, sorted (none: no route names the
	// policy).
	Pools []Pool
	// PurgeToken is the purge annotation's value ("" when unset).
	PurgeToken string
	// Status is the status the policy recorded at its last decision.
	Status   v1.CachePolicyStatus
	Observed Observations
	Now      time.Time
}

// Pool is a pool behind the tier.
type Pool struct {
	Name string
	// Revision is the content the pool serves (nil: it has no Deployment
	// yet, so nothing of it is cached).
	Revision *Revision
	// RolledOut: the pool's Deployment runs only pods of its current template.
	RolledOut bool
}

// Revision is a pool's content revision in two parts: its worker pod
// template (a hash) and its content ConfigMap's resourceVersion ("" without
// one, "missing" when the ConfigMap it names does not exist).
type Revision struct{ Template, ConfigMap string }

func (r Revision) String() string { return "template:" + r.Template + ",configmap:" + r.ConfigMap }

// ParseRevision reads a revision back from its String.
func ParseRevision(s string) Revision {
	template, configMap, _ := strings.Cut(s, ",configmap:")
	return Revision{Template: strings.TrimPrefix(template, "template:"), ConfigMap: configMap}
}

// Observations are what the operator saw of the policy, outside its status.
type Observations struct {
	// UnreferencedSince is when the operator first saw no route name the
	// policy (zero: it has not, or a route named it again since).
	UnreferencedSince time.Time
}

// Tier is what becomes of the tier's Deployment, Service and ConfigMap.
type Tier int

const (
	// Serve: apply the tier for the pools behind it.
	Serve Tier = iota
	// ServeThroughGrace: no route names the policy; leave the tier as it is
	// until the grace ends.
	ServeThroughGrace
	// Retire: remove the tier.
	Retire
)

// Decision is what the controller does.
type Decision struct {
	Tier Tier
	// UnreferencedSince is the observation to keep for the next decision:
	// when the operator first saw the policy unreferenced (zero: a route
	// names it; forget any such note).
	UnreferencedSince time.Time
	// Purges are the purges to make, in order; each says the event to raise
	// and what to record once made.
	Purges []Purge
	// PoolContent is the status.poolContent to record once the purges are
	// made.
	PoolContent []v1.PoolContent
	// Recheck is when to decide again though nothing changed (0: on the
	// next change).
	Recheck time.Duration
}

// Purge is a purge of the tier's entries.
type Purge struct {
	// Pool is the pool whose entries to purge ("" every entry).
	Pool string
	// Token is the purge annotation's value the purge answers ("" for a
	// purge after a pool's content changed).
	Token string
	// At is when the purge is made, to the second.
	At time.Time
}

// Event is an event to record on the policy.
type Event struct {
	Type, Reason, Action, Message string
}

// Event is the event to raise once the purge removed entries.
func (p Purge) Event(entries int64) Event {
	if p.Token != "" {
		return Event{Type: corev1.EventTypeNormal, Reason: "Purged", Action: "Purge",
			Message: fmt.Sprintf("purged %d entries (%s=%s)", entries, v1.PurgeAnnotation, p.Token)}
	}
	return Event{Type: corev1.EventTypeNormal, Reason: "Purged", Action: "PurgeContent",
		Message: fmt.Sprintf("the content of pool %s changed: purged %d entries", p.Pool, entries)}
}

// LastPurge is the status.lastPurge to record once the purge removed
// entries (nil: the purge answers no annotation).
func (p Purge) LastPurge(entries int64) *v1.CachePurge {
	if p.Token == "" {
		return nil
	}
	return &v1.CachePurge{Token: p.Token, Time: metav1.Time{Time: p.At}, Entries: entries}
}

// Decide runs the steps in the package's order.
func Decide(in Input) Decision {
	var d Decision
	if len(in.Pools) == 0 {
		retire(in, &d)
		return d
	}
	at := in.Now.Truncate(time.Second)
	if in.PurgeToken != "" && (in.Status.LastPurge == nil || in.Status.LastPurge.Token != in.PurgeToken) {
		d.Purges = append(d.Purges, Purge{Token: in.PurgeToken, At: at})
	}
	for _, p := range in.Pools {
		if p.Revision == nil {
			continue // no workers yet
		}
		if p.Revision.ConfigMap != "" {
			d.recheckWithin(ContentPoll) // kubelet's update of the files is not an event the operator sees
		}
		record, purge, wait := poolContent(findPoolContent(in.Status.PoolContent, p.Name), p, in.Now)
		if purge {
			d.Purges = append(d.Purges, Purge{Pool: p.Name, At: at})
		}
		d.PoolContent = append(d.PoolContent, record)
		d.recheckWithin(wait)
	}
	return d
}

// retire decides for a policy no route names: serve through the grace,
// counted from the first time the operator saw it so, then retire.
func retire(in Input, d *Decision) {
	since := in.Observed.UnreferencedSince
	if since.IsZero() {
		since = in.Now
	}
	d.UnreferencedSince = since
	if wait := RemovalGrace - in.Now.Sub(since); wait > 0 {
		d.Tier, d.Recheck = ServeThroughGrace, wait
		return
	}
	d.Tier = Retire
}

// poolContent compares a pool's revision with the one its entries came from
// (rec, nil when none is recorded): it returns the record to keep, whether
// to purge the pool's entries first, and when to look again (0: on the next
// change).
func poolContent(rec *v1.PoolContent, p Pool, now time.Time) (record v1.PoolContent, purge bool, wait time.Duration) {
	rev := p.Revision.String()
	at := &metav1.Time{Time: now.Truncate(time.Second)}
	switch {
	case rec == nil:
		// A new tier, or a pool newly behind it: nothing cached from older content.
		return v1.PoolContent{Pool: p.Name, Revision: rev}, false, 0
	case rec.Revision == rev && rec.Pending == "":
		return *rec.DeepCopy(), false, 0
	case rec.Pending != rev || rec.PendingSince == nil:
		// Note the new revision (again, if it changed meanwhile) and when it came.
		noted := *rec.DeepCopy()
		noted.Pending, noted.PendingSince = rev, at
		return noted, false, time.Second
	case !p.RolledOut:
		return *rec.DeepCopy(), false, ContentPoll
	}
	if ParseRevision(rec.Revision).ConfigMap != p.Revision.ConfigMap {
		if wait := ConfigMapSettle - now.Sub(rec.PendingSince.Time); wait > 0 {
			return *rec.DeepCopy(), false, wait
		}
	}
	return v1.PoolContent{Pool: p.Name, Revision: rev, PurgedAt: at}, true, 0
}

// recheckWithin makes the decision look again within wait (0: no need).
func (d *Decision) recheckWithin(wait time.Duration) {
	if wait > 0 && (d.Recheck == 0 || wait < d.Recheck) {
		d.Recheck = wait
	}
}

func findPoolContent(list []v1.PoolContent, pool string) *v1.PoolContent {
	for i := range list {
		if list[i].Pool == pool {
			return &list[i]
		}
	}
	return nil
}
