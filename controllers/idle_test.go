package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

func TestDecideIdle(t *testing.T) {
	now := time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)
	idleAt := &metav1.Time{Time: now.Add(-time.Hour)}
	pool := model.Pool{IdleTimeout: 20 * time.Minute, OnDemandStart: true}
	never := pool
	never.IdleTimeout = 0
	stopped := pool
	stopped.Stopped = true
	for _, tt := range []struct {
		name        string
		pool        model.Pool
		idleSince   *metav1.Time
		startAsked  time.Time
		lastActive  time.Time
		wantIdle    bool
		wantEvent   string
		wantRecheck time.Duration
	}{
		{"a pool with requests 5 minutes ago stays up and looks again when its 20 minutes would pass", pool, nil, time.Time{}, now.Add(-5 * time.Minute), false, "", 15 * time.Minute},
		{"a pool without requests for 20 minutes goes idle", pool, nil, time.Time{}, now.Add(-20 * time.Minute), true, v1.ReasonIdled, 0},
		{"an idle pool stays idle until a start is asked", pool, idleAt, time.Time{}, now.Add(-2 * time.Hour), true, "", 0},
		{"a start asked before the pool went idle does not wake it", pool, idleAt, idleAt.Add(-time.Minute), now.Add(-2 * time.Hour), true, "", 0},
		{"a start asked after the pool went idle starts it", pool, idleAt, now.Add(-time.Second), now.Add(-2 * time.Hour), false, v1.ReasonStartedOnDemand, 0},
		{"a pool with idle timeout 0s never goes idle", never, nil, time.Time{}, now.Add(-48 * time.Hour), false, "", 0},
		{"turning the idle timeout off starts an idle pool", never, idleAt, time.Time{}, now.Add(-48 * time.Hour), false, "", 0},
		{"a stopped pool is not idle: its restart decides", stopped, idleAt, time.Time{}, now.Add(-48 * time.Hour), false, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := decideIdle(tt.pool, tt.idleSince, tt.startAsked, tt.lastActive, now)
			if (v.idleSince != nil) != tt.wantIdle || v.event != tt.wantEvent || v.recheck != tt.wantRecheck {
				t.Errorf("idle %v, event %q, recheck %s; want %v, %q, %s", v.idleSince != nil, v.event, v.recheck, tt.wantIdle, tt.wantEvent, tt.wantRecheck)
			}
		})
	}
}

func TestAnUnreadableFrontendKeepsItsNamespacesPoolsActive(t *testing.T) {
	var a Activity
	start := time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)
	shop, blog, other := key("web", "shop"), key("web", "blog"), key("api", "shop")
	for _, k := range []struct{ ns, name string }{{"web", "shop"}, {"web", "blog"}, {"api", "shop"}} {
		a.LastActive(key(k.ns, k.name), start)
	}
	later := start.Add(30 * time.Minute)
	a.TouchNamespace("web", later)
	if a.LastActive(shop, later) != later || a.LastActive(blog, later) != later || a.LastActive(other, later) != start {
		t.Errorf("after touching namespace web: shop %s, blog %s, api/shop %s", a.LastActive(shop, later), a.LastActive(blog, later), a.LastActive(other, later))
	}
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
