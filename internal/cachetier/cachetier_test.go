package cachetier

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// now is the injected clock of every decision here.
var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-d)} }

// rolledOut is a pool whose workers all run its current template.
func rolledOut(name string, rev Revision) Pool {
	return Pool{Name: name, Revision: &rev, RolledOut: true}
}

// rolling is a pool whose rollout is not complete.
func rolling(name string, rev Revision) Pool { return Pool{Name: name, Revision: &rev} }

func TestWhatBecomesOfACacheTierAndItsEntries(t *testing.T) {
	oldImage, newImage := Revision{Template: "aaa"}, Revision{Template: "bbb"}
	oldData, newData := Revision{Template: "aaa", ConfigMap: "10"}, Revision{Template: "aaa", ConfigMap: "11"}
	current := func(pool string, rev Revision) v1.PoolContent {
		return v1.PoolContent{Pool: pool, Revision: rev.String()}
	}
	pending := func(pool string, from, to Revision, since time.Duration) v1.PoolContent {
		return v1.PoolContent{Pool: pool, Revision: from.String(), Pending: to.String(), PendingSince: ago(since)}
	}
	purged := func(pool string, rev Revision) v1.PoolContent {
		return v1.PoolContent{Pool: pool, Revision: rev.String(), PurgedAt: ago(0)}
	}
	recorded := func(pc ...v1.PoolContent) v1.CachePolicyStatus { return v1.CachePolicyStatus{PoolContent: pc} }
	answered := v1.CachePolicyStatus{LastPurge: &v1.CachePurge{Token: "1", Time: *ago(time.Hour), Entries: 40},
		PoolContent: []v1.PoolContent{current("shop", oldImage)}}
	for _, tt := range []struct {
		name string
		in   Input
		want Decision
	}{
		// Retire.
		{"a policy first seen unreferenced keeps its tier serving and looks again at the end of the grace",
			Input{Status: recorded(current("shop", oldImage))},
			Decision{Tier: ServeThroughGrace, UnreferencedSince: now, Recheck: RemovalGrace}},
		{"a policy unreferenced for 4 s keeps its tier serving for the 6 s left",
			Input{Observed: Observations{UnreferencedSince: now.Add(-4 * time.Second)}},
			Decision{Tier: ServeThroughGrace, UnreferencedSince: now.Add(-4 * time.Second), Recheck: 6 * time.Second}},
		{"a policy unreferenced past the grace has its tier retired",
			Input{Observed: Observations{UnreferencedSince: now.Add(-RemovalGrace)}},
			Decision{Tier: Retire, UnreferencedSince: now.Add(-RemovalGrace)}},
		{"an unreferenced policy answers no purge and records no pool's content",
			Input{PurgeToken: "2", Status: recorded(pending("shop", oldImage, newImage, time.Hour))},
			Decision{Tier: ServeThroughGrace, UnreferencedSince: now, Recheck: RemovalGrace}},
		{"a policy referenced again within the grace serves and forgets since when it was unreferenced",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}, Status: recorded(current("shop", oldImage)),
				Observed: Observations{UnreferencedSince: now.Add(-4 * time.Second)}},
			Decision{Tier: Serve, PoolContent: []v1.PoolContent{current("shop", oldImage)}}},

		// The purge annotation.
		{"a new purge token purges every entry",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}, PurgeToken: "2", Status: answered},
			Decision{Purges: []Purge{{Token: "2", At: now}}, PoolContent: []v1.PoolContent{current("shop", oldImage)}}},
		{"a purge token already answered purges nothing",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}, PurgeToken: "1", Status: answered},
			Decision{PoolContent: []v1.PoolContent{current("shop", oldImage)}}},
		{"the first purge token of a policy purges every entry",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}, PurgeToken: "1", Status: recorded(current("shop", oldImage))},
			Decision{Purges: []Purge{{Token: "1", At: now}}, PoolContent: []v1.PoolContent{current("shop", oldImage)}}},
		{"a new purge token is answered before a pool's new content is purged",
			Input{Pools: []Pool{rolledOut("shop", newImage)}, PurgeToken: "2", Status: recorded(pending("shop", oldImage, newImage, time.Second))},
			Decision{Purges: []Purge{{Token: "2", At: now}, {Pool: "shop", At: now}}, PoolContent: []v1.PoolContent{purged("shop", newImage)}}},

		// A pool's content.
		{"a pool seen for the first time is recorded without a purge",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}},
			Decision{PoolContent: []v1.PoolContent{current("shop", oldImage)}}},
		{"a pool without a Deployment yet is neither recorded nor purged",
			Input{Pools: []Pool{{Name: "shop"}}},
			Decision{}},
		{"unchanged content needs nothing",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}, Status: recorded(current("shop", oldImage))},
			Decision{PoolContent: []v1.PoolContent{current("shop", oldImage)}}},
		{"a pool with a ConfigMap is looked at again every poll, its content unchanged",
			Input{Pools: []Pool{rolledOut("shop", oldData)}, Status: recorded(current("shop", oldData))},
			Decision{PoolContent: []v1.PoolContent{current("shop", oldData)}, Recheck: ContentPoll}},
		{"a new revision is noted first and looked at again within a second",
			Input{Pools: []Pool{rolling("shop", newImage)}, Status: recorded(current("shop", oldImage))},
			Decision{PoolContent: []v1.PoolContent{pending("shop", oldImage, newImage, 0)}, Recheck: time.Second}},
		{"a new image waits for the pool's rollout",
			Input{Pools: []Pool{rolling("shop", newImage)}, Status: recorded(pending("shop", oldImage, newImage, time.Second))},
			Decision{PoolContent: []v1.PoolContent{pending("shop", oldImage, newImage, time.Second)}, Recheck: ContentPoll}},
		{"a new image is purged once the rollout is complete",
			Input{Pools: []Pool{rolledOut("shop", newImage)}, Status: recorded(pending("shop", oldImage, newImage, time.Second))},
			Decision{Purges: []Purge{{Pool: "shop", At: now}}, PoolContent: []v1.PoolContent{purged("shop", newImage)}}},
		{"new ConfigMap data waits for kubelet to update the workers' files",
			Input{Pools: []Pool{rolledOut("shop", newData)}, Status: recorded(pending("shop", oldData, newData, 80*time.Second))},
			Decision{PoolContent: []v1.PoolContent{pending("shop", oldData, newData, 80*time.Second)}, Recheck: ConfigMapSettle - 80*time.Second}},
		{"new ConfigMap data is purged after the settle time",
			Input{Pools: []Pool{rolledOut("shop", newData)}, Status: recorded(pending("shop", oldData, newData, ConfigMapSettle))},
			Decision{Purges: []Purge{{Pool: "shop", At: now}}, PoolContent: []v1.PoolContent{purged("shop", newData)}, Recheck: ContentPoll}},
		{"a revision that changed again while pending is noted again",
			Input{Pools: []Pool{rolledOut("shop", newData)}, Status: recorded(pending("shop", oldImage, newImage, time.Minute))},
			Decision{PoolContent: []v1.PoolContent{pending("shop", oldImage, newData, 0)}, Recheck: time.Second}},
		{"a pool no longer behind the tier is dropped from the record",
			Input{Pools: []Pool{rolledOut("shop", oldImage)}, Status: recorded(current("blog", oldImage), current("shop", oldImage))},
			Decision{PoolContent: []v1.PoolContent{current("shop", oldImage)}}},

		// Several pools.
		{"of three pools one is purged, one waits and one is current, and the soonest wait is looked at again",
			Input{Pools: []Pool{rolledOut("blog", newImage), rolledOut("shop", newData), rolledOut("static", oldImage)},
				Status: recorded(pending("blog", oldImage, newImage, time.Second), pending("shop", oldData, newData, 80*time.Second), current("static", oldImage))},
			Decision{Purges: []Purge{{Pool: "blog", At: now}},
				PoolContent: []v1.PoolContent{purged("blog", newImage), pending("shop", oldData, newData, 80*time.Second), current("static", oldImage)},
				Recheck:     ConfigMapSettle - 80*time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			if got := Decide(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decided\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestAPurgeSaysWhatToRecordOnceMade(t *testing.T) {
	for _, tt := range []struct {
		name          string
		purge         Purge
		wantMessage   string
		wantLastPurge *v1.CachePurge
	}{
		{"a purge asked for with the annotation reports the token it answered",
			Purge{Token: "2", At: now}, "purged 12 entries (webfarm.dev/purge=2)", &v1.CachePurge{Token: "2", Time: metav1.Time{Time: now}, Entries: 12}},
		{"a purge after a pool's content changed names the pool and answers no token",
			Purge{Pool: "shop", At: now}, "the content of pool shop changed: purged 12 entries", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if e := tt.purge.Event(12); e.Reason != "Purged" || e.Message != tt.wantMessage {
				t.Errorf("event %+v, want reason Purged and message %q", e, tt.wantMessage)
			}
			if got := tt.purge.LastPurge(12); !reflect.DeepEqual(got, tt.wantLastPurge) {
				t.Errorf("last purge %+v, want %+v", got, tt.wantLastPurge)
			}
		})
	}
}

func TestARevisionReadsBackAsItWasWritten(t *testing.T) {
	for _, r := range []Revision{{"0123abcd", "42"}, {"0123abcd", ""}, {"x", "missing"}} {
		if got := ParseRevision(r.String()); got != r {
			t.Errorf("%q read back as %+v", r.String(), got)
		}
	}
}
