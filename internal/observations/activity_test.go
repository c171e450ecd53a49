package observations

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestAnUnreadableFrontendKeepsItsNamespacesPoolsActive(t *testing.T) {
	var a Store
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
