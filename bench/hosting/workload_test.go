package main

import (
	"testing"
	"time"
)

func TestTheWorkloadsObjects(t *testing.T) {
	w := workload{routes: 20000, namespaces: 200, pools: 10}
	t.Run("every tenant namespace is granted the pools once, within Gateway API's limit per grant", func(t *testing.T) {
		seen := map[string]int{}
		for _, g := range w.grants() {
			if n := len(g.Spec.From); n == 0 || n > grantFromMax {
				t.Errorf("grant %s has %d namespaces, want 1 to %d", g.Name, n, grantFromMax)
			}
			for _, f := range g.Spec.From {
				seen[string(f.Namespace)]++
			}
		}
		for n := range w.namespaces {
			if seen[tenantNS(n)] != 1 {
				t.Errorf("namespace %s is granted %d times, want once", tenantNS(n), seen[tenantNS(n)])
			}
		}
		if len(seen) != w.namespaces {
			t.Errorf("%d namespaces granted, want %d", len(seen), w.namespaces)
		}
	})
	t.Run("every route has a host of its own and names a shared pool", func(t *testing.T) {
		hosts := map[string]bool{}
		perNS := map[string]int{}
		for i := range w.routes {
			r := w.route(i)
			h := string(r.Spec.Hostnames[0])
			if hosts[h] {
				t.Fatalf("host %s is on two routes", h)
			}
			hosts[h] = true
			perNS[r.Namespace]++
			if got := string(r.Spec.Rules[0].BackendRefs[0].Name); got != w.routePool(i) {
				t.Fatalf("route %d names pool %s, want %s", i, got, w.routePool(i))
			}
		}
		for ns, n := range perNS {
			if n != w.routes/w.namespaces {
				t.Errorf("namespace %s has %d routes, want %d", ns, n, w.routes/w.namespaces)
			}
		}
	})
	t.Run("the first routes reach every pool, one each", func(t *testing.T) {
		pools := map[string]bool{}
		for i := range w.pools {
			pools[w.routePool(i)] = true
		}
		if len(pools) != w.pools {
			t.Errorf("the first %d routes reach %d pools", w.pools, len(pools))
		}
	})
	t.Run("a changed host name is on no route", func(t *testing.T) {
		for k := range 50 {
			for i := range w.routes {
				if routeHost(i) == changedHost(k) {
					t.Fatalf("change %d's host %s is route %d's", k, changedHost(k), i)
				}
			}
		}
	})
}

func TestPercentiles(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var out []time.Duration
		for _, v := range vs {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"the median of an odd count is the middle value", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"the 99th percentile of 50 values is the slowest change", append(ms(make([]int, 49)...), 900*time.Millisecond), 99, 900 * time.Millisecond},
		{"no values give zero", nil, 50, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := percentile(c.sorted, c.p); got != c.want {
				t.Errorf("percentile(%v, %g) = %s, want %s", c.sorted, c.p, got, c.want)
			}
		})
	}
}
