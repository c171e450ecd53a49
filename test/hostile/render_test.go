package hostile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	applier "webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	k8srender "webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// rendered is everything the controllers would write for the objects of one
// case's namespace, and the model's refusals by "Kind/name".
type rendered struct {
	// api is the API server the namespace's objects are read from and its
	// children are applied to.
	api client.Client

	modelErrs map[string]error
	// applyErrs are the API server's refusals of rendered child objects
	// (the controllers report them as ApplyFailed).
	applyErrs []string

	pools     map[string]model.Pool
	poolConf  map[string]string
	poolObjs  map[string]k8srender.PoolObjects
	caches    map[string]model.Cache
	cacheConf map[string]string
	agentConf map[string]string
	farms     map[string]model.Farm
	// bootstrap is each farm's Envoy bootstrap with its routing inlined (the
	// routing the operator serves over xDS), as JSON.
	bootstrap map[string][]byte
	routing   map[string]envoy.Routing
}

// configs are all the config files rendered, by a name for messages.
func (r *rendered) configs() map[string]string {
	out := map[string]string{}
	for n, c := range r.poolConf {
		out["nginx.conf of AppPool "+n] = c
	}
	for n, c := range r.cacheConf {
		out["nginx.conf of CachePolicy "+n] = c
	}
	for n, c := range r.agentConf {
		out["cache agent config of CachePolicy "+n] = c
	}
	for n, c := range r.bootstrap {
		out["Envoy config of WebFarm "+n] = string(c)
	}
	return out
}

// renderNamespace reads every WebFarm, AppPool and CachePolicy of ns as the
// controllers read them, resolves and renders them as the controllers do,
// and checks every output:
//   - nginx.conf passes the real `nginx -t`, has only directives the
//     renderer emits for its golden files, and the same statements as the
//     config of the same model with plain names;
//   - a cache tier's nginx routes each of its pools by the pool's name;
//   - the farm's routing passes FarmRouting's own validation and the real
//     `envoy --mode validate` (with the SDS files of its TLS sites), has only the filters and types the renderer
//     emits for its golden files, and every route of a virtual host is
//     reachable (no earlier route with the same match);
//   - every Kubernetes child object passes a server-side apply (recorded:
//     the case decides whether a refusal is expected);
//   - memory quantities reach the rendering as written.
//
// A model refusal is recorded, not failed: the case decides whether it is expected.
func renderNamespace(t *testing.T, api client.Client, ns string) *rendered {
	t.Helper()
	ctx := context.Background()
	r := &rendered{
		api:       api,
		modelErrs: map[string]error{},
		pools:     map[string]model.Pool{}, poolConf: map[string]string{}, poolObjs: map[string]k8srender.PoolObjects{},
		caches: map[string]model.Cache{}, cacheConf: map[string]string{}, agentConf: map[string]string{},
		farms: map[string]model.Farm{}, bootstrap: map[string][]byte{}, routing: map[string]envoy.Routing{},
	}
	var (
		pools    v1.AppPoolList
		farms    v1.WebFarmList
		policies v1.CachePolicyList
	)
	for _, l := range []client.ObjectList{&pools, &farms, &policies} {
		if err := api.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}

	// AppPools: the AppPool controller.
	for i := range pools.Items {
		ap := &pools.Items[i]
		p, err := model.ResolvePool(ap, platform)
		if err != nil {
			r.modelErrs["AppPool/"+ap.Name] = err
			continue
		}
		checkBytes(t, "AppPool "+ap.Name+" memory", ap.Spec.Memory, p.MemoryBytes)
		conf, err := nginx.PoolConfig(p)
		if err != nil {
			t.Errorf("the model accepted AppPool %s but the renderer failed: %v", ap.Name, err)
			continue
		}
		reference, err := nginx.PoolConfig(testutil.PlainPool(p))
		if err != nil {
			t.Fatal(err)
		}
		checkNginxStructure(t, "AppPool "+ap.Name, conf, reference)
		testutil.NginxCheck(t, conf, nginx.PoolScripts(p))
		objs := k8srender.Pool(p, conf)
		r.applyChildren("AppPool "+ap.Name, objs.ConfigMap, objs.Service, objs.Deployment, objs.PodDisruptionBudget)
		r.pools[ap.Name], r.poolConf[ap.Name], r.poolObjs[ap.Name] = p, conf, objs
	}

	// CachePolicies: the CachePolicy controller. Its pools are those of
	// every route of the namespace's farms that names it; a pool's Service
	// exists (with a cluster IP) once the pool resolved and was applied.
	for i := range policies.Items {
		cp := &policies.Items[i]
		var behind []string
		for _, f := range farms.Items {
			for _, s := range f.Spec.Sites {
				for _, rt := range s.Routes {
					if string(rt.CachePolicy) == cp.Name {
						behind = append(behind, string(rt.AppPool))
					}
				}
			}
		}
		slices.Sort(behind)
		var upstreams []model.Upstream
		for j, pool := range slices.Compact(behind) {
			if _, ok := r.pools[pool]; ok {
				upstreams = append(upstreams, model.Upstream{Pool: pool, Address: fmt.Sprintf("10.96.%d.%d", j/250, j%250+1), Port: 80})
			}
		}
		c, err := model.ResolveCache(cp, upstreams, platform)
		if err != nil {
			r.modelErrs["CachePolicy/"+cp.Name] = err
			continue
		}
		checkBytes(t, "CachePolicy "+cp.Name+" memorySize", cp.Spec.MemorySize, c.MemorySizeBytes)
		checkBytes(t, "CachePolicy "+cp.Name+" maxObjectSize", cp.Spec.MaxObjectSize, c.MaxObjectSizeBytes)
		conf, err := nginx.CacheConfig(c)
		if err != nil {
			t.Errorf("the model accepted CachePolicy %s but the renderer failed: %v", cp.Name, err)
			continue
		}
		agent, err := nginx.CacheAgentConfig(c)
		if err != nil {
			t.Errorf("the model accepted CachePolicy %s but the agent's config failed: %v", cp.Name, err)
			continue
		}
		reference, err := nginx.CacheConfig(testutil.PlainCache(c))
		if err != nil {
			t.Fatal(err)
		}
		checkNginxStructure(t, "CachePolicy "+cp.Name, conf, reference)
		checkPoolMap(t, cp.Name, conf, c.Upstreams)
		checkAgentConfig(t, cp.Name, agent, c.Upstreams)
		testutil.NginxCheck(t, conf)
		objs := k8srender.Cache(c, conf, agent)
		r.applyChildren("CachePolicy "+cp.Name, objs.ConfigMap, objs.Service, objs.Deployment, objs.PodDisruptionBudget)
		r.caches[cp.Name], r.cacheConf[cp.Name], r.agentConf[cp.Name] = c, conf, agent
	}

	// WebFarms: the WebFarm controller (frontend children) and the routing
	// controller (xDS).
	for i := range farms.Items {
		wf := &farms.Items[i]
		f, err := model.ResolveFarm(wf, platform)
		if err != nil {
			r.modelErrs["WebFarm/"+wf.Name] = err
			continue
		}
		checkBytes(t, "WebFarm "+wf.Name+" frontend memory", wf.Spec.Frontend.Memory, f.Frontend.MemoryBytes)
		raw, err := envoy.Bootstrap(f)
		if err != nil {
			t.Errorf("the model accepted WebFarm %s but its bootstrap failed: %v", wf.Name, err)
			continue
		}
		objs := k8srender.Frontend(f, raw)
		r.applyChildren("WebFarm "+wf.Name, objs.ServiceAccount, objs.ConfigMap, objs.Service, objs.Deployment, objs.PodDisruptionBudget)

		// The routing controller: the farm's pools that exist and resolve,
		// each existing pool's and cache tier's workers as endpoints.
		farmPools := map[string]model.Pool{}
		backends := endpoints.Backends{}
		for j, n := range f.Pools {
			if p, ok := r.pools[n]; ok {
				farmPools[n] = p
				backends[vocabulary.PoolCluster(n)] = []endpoints.Endpoint{{Address: fmt.Sprintf("10.244.%d.%d", j/250, j%250+1), Port: nginx.HTTPPort}}
			}
		}
		for j, n := range f.CachePolicies {
			if _, ok := r.caches[n]; ok {
				backends[vocabulary.CacheCluster(n)] = []endpoints.Endpoint{{Address: fmt.Sprintf("10.245.%d.%d", j/250, j%250+1), Port: nginx.HTTPPort}}
			}
		}
		routing, err := envoy.FarmRouting(f, farmPools, backends)
		if err != nil {
			t.Errorf("FarmRouting refused WebFarm %s, which the API server and the model accept: %v", wf.Name, err)
			continue
		}
		doc := bootstrapJSON(t, f, routing)
		checkEnvoyExtensions(t, "WebFarm "+wf.Name, doc)
		checkRoutesReachable(t, "WebFarm "+wf.Name, routing)
		// Envoy checks that the SDS files and the certificate directories
		// of TLS sites exist: they go to a directory of the test's, as the
		// pod mounts its ConfigMap and the sites' Secrets.
		dir := t.TempDir()
		if err := localenvoy.WriteCertConfig(dir, f); err != nil {
			t.Fatal(err)
		}
		testutil.EnvoyCheck(t, localenvoy.LocalPaths(dir, string(doc)), envoy.NodeIDArgs("frontend-0")...)
		r.farms[wf.Name], r.bootstrap[wf.Name], r.routing[wf.Name] = f, doc, routing
	}
	return r
}

// applyChildren applies the rendered child objects as the controllers do
// (server-side apply under the operator's field owner), as a dry run: the
// API server must accept what the operator would write. A dry run
// allocates no node port, so a Service with a fixed node port is applied
// for real (the case's namespace is its own).
func (r *rendered) applyChildren(owner string, objs ...runtime.ApplyConfiguration) {
	for _, o := range objs {
		opts := []client.ApplyOption{client.FieldOwner(applier.FieldOwner), client.ForceOwnership}
		if !fixedNodePort(o) {
			opts = append(opts, client.DryRunAll)
		}
		if err := r.api.Apply(context.Background(), o, opts...); err != nil {
			r.applyErrs = append(r.applyErrs, fmt.Sprintf("Kubernetes refuses a child object of %s that the operator renders: %v", owner, err))
		}
	}
}

func fixedNodePort(o runtime.ApplyConfiguration) bool {
	svc, ok := o.(*corev1ac.ServiceApplyConfiguration)
	if !ok || svc.Spec == nil {
		return false
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != nil {
			return true
		}
	}
	return false
}

// checkBytes fails when a memory quantity of a manifest does not reach the
// rendering as written: the byte count must be the quantity (rounded up to a
// byte), or the largest int64 when the quantity is larger still.
func checkBytes(t *testing.T, field string, q *resource.Quantity, got int64) {
	t.Helper()
	if q == nil || q.IsZero() {
		return
	}
	limit := resource.NewQuantity(math.MaxInt64, resource.BinarySI)
	if q.Cmp(*limit) >= 0 {
		if got != math.MaxInt64 {
			t.Errorf("%s %s (more than an int64 holds) was rendered as %d bytes (%s)", field, q, got, resource.NewQuantity(got, resource.BinarySI))
		}
		return
	}
	want := q.Value()
	if got != want || got <= 0 {
		t.Errorf("%s %s was rendered as %d bytes, want %d", field, q, got, want)
	}
}

// checkAbsent fails when a hostile string appears in a rendered config, as
// written or JSON-escaped.
func checkAbsent(t *testing.T, r *rendered, hostile []string) {
	t.Helper()
	for name, conf := range r.configs() {
		for _, h := range hostile {
			escaped, _ := json.Marshal(h)
			if strings.Contains(conf, h) || strings.Contains(conf, strings.Trim(string(escaped), `"`)) {
				t.Errorf("the %s contains the manifest's string %q\n%s", name, h, excerpt(conf))
			}
		}
	}
}

// checkStatusCondition writes a model refusal into the object's Ready
// condition as the controllers' finish does (reason InvalidSpec): the
// person applying the manifest must be able to read it.
func checkStatusCondition(t *testing.T, ns, kind, name string, modelErr error) {
	t.Helper()
	var obj interface {
		client.Object
		StatusConditions() *[]metav1.Condition
	}
	switch kind {
	case "WebFarm":
		obj = &v1.WebFarm{}
	case "AppPool":
		obj = &v1.AppPool{}
	case "CachePolicy":
		obj = &v1.CachePolicy{}
	default:
		t.Fatalf("unknown kind %s", kind)
	}
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	meta.SetStatusCondition(obj.StatusConditions(), metav1.Condition{
		Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonInvalidSpec, Message: controllers.FitConditionMessage(modelErr.Error()),
	})
	if err := k8s.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		t.Errorf("the controller could not report the model's refusal in %s %s's status (%d-byte message): %v",
			kind, name, len(modelErr.Error()), shorten(err.Error()))
	}
}

func shorten(s string) string {
	if len(s) > 600 {
		return s[:300] + " ... " + s[len(s)-300:]
	}
	return s
}

// checkRoutesReachable fails when a route of a virtual host can never match
// because an earlier route of the same virtual host has the same match: two
// routes of the manifest then compete and one of them silently loses.
func checkRoutesReachable(t *testing.T, farm string, r envoy.Routing) {
	t.Helper()
	for _, rc := range r.Routes {
		for _, vh := range rc.VirtualHosts {
			seen := map[string]int{}
			for i, rt := range vh.Routes {
				key, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(rt.Match)
				if err != nil {
					t.Fatal(err)
				}
				// protojson varies its whitespace: compare compacted.
				var v any
				if err := json.Unmarshal(key, &v); err != nil {
					t.Fatal(err)
				}
				k, _ := json.Marshal(v)
				if j, dup := seen[string(k)]; dup {
					t.Errorf("%s: route %d of site %s (to %s) can never match: route %d has the same match %s (to %s)",
						farm, i, vh.Name, target(rt.GetRoute().GetCluster()), j, k, target(vh.Routes[j].GetRoute().GetCluster()))
				}
				seen[string(k)] = i
			}
		}
	}
}

func target(cluster string) string {
	if cluster != "" {
		return cluster
	}
	return "a direct response"
}

// checkEnvoyExtensions fails when the output has a filter or a typed config
// the Envoy renderer's golden files never have: everything else came from
// the manifest.
func checkEnvoyExtensions(t *testing.T, farm string, doc []byte) {
	t.Helper()
	allowed := testutil.EnvoyEmittedExtensions(t, "../../../internal/render/envoy/testdata/*.json")
	got, err := testutil.EnvoyExtensions(doc)
	if err != nil {
		t.Fatalf("%s: the Envoy config is not JSON: %v", farm, err)
	}
	for e := range got {
		if !allowed[e] {
			t.Errorf("%s: the Envoy config has %s, which the renderer never emits by itself", farm, e)
		}
	}
}

// checkNginxStructure fails when conf has a statement the renderer never
// emits for its golden files, or other statements than reference (the same
// model rendered with plain names): no user string may add or change one.
func checkNginxStructure(t *testing.T, owner, conf, reference string) {
	t.Helper()
	allowed := testutil.NginxEmittedDirectives(t, "../../../internal/render/nginx/testdata/*.conf")
	got, err := testutil.NginxStatements(conf)
	if err != nil {
		t.Errorf("%s: the rendered nginx.conf does not parse: %v\n%s", owner, err, excerpt(conf))
		return
	}
	for _, s := range got {
		if !allowed[s.Path] {
			t.Errorf("%s: nginx.conf has %q, which the renderer never emits by itself\n%s", owner, s.Path, excerpt(conf))
		}
	}
	want, err := testutil.NginxStatements(reference)
	if err != nil {
		t.Fatalf("%s: the reference nginx.conf does not parse: %v", owner, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: a string of the manifest changed nginx.conf's statements:\n got %v\nwant %v", owner, got, want)
	}
}

// poolMap is the map of a cache tier's nginx.conf from the pool header to the pool.
var poolMap = regexp.MustCompile(`(?s)map \$http_x_webfarm_pool \$webfarm_pool \{(.*?)\n\s*\}`)

// nginxWord is a word of nginx.conf as nginx reads it (ngx_conf_read_token):
// quotes removed; a backslash before a quote or a backslash escapes it, and
// "\t", "\r" and "\n" are a tab, a carriage return and a line feed; any
// other backslash stays.
func nginxWord(raw string) string {
	if len(raw) >= 2 && (raw[0] == '"' || raw[0] == '\'') && raw[len(raw)-1] == raw[0] {
		raw = raw[1 : len(raw)-1]
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			switch raw[i+1] {
			case '"', '\'', '\\':
				i++
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case 'r':
				b.WriteByte('\r')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			}
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

// checkPoolMap fails unless the cache tier's nginx, reading its config as
// nginx does, maps the pool header of each pool behind the tier to that pool
// (a request for a pool the map misses is answered 421).
func checkPoolMap(t *testing.T, policy, conf string, upstreams []model.Upstream) {
	t.Helper()
	m := poolMap.FindStringSubmatch(conf)
	if m == nil {
		t.Errorf("CachePolicy %s: nginx.conf has no pool map\n%s", policy, excerpt(conf))
		return
	}
	routes := map[string]string{}
	raws := map[string]string{}
	for _, line := range strings.Split(m[1], ";") {
		words := strings.Fields(line)
		if len(words) != 2 || words[0] == "default" {
			continue
		}
		key := nginxWord(words[0])
		// The map module takes a leading backslash off a key, so a key can
		// be spelled like one of its parameters.
		key = strings.TrimPrefix(key, `\`)
		routes[key] = nginxWord(words[1])
		raws[nginxWord(words[1])] = words[0]
	}
	for _, u := range upstreams {
		if got, ok := routes[u.Pool]; !ok || got != u.Pool {
			raw := raws[u.Pool]
			read := strings.TrimPrefix(nginxWord(raw), `\`)
			t.Errorf("CachePolicy %s: pool %q is mapped by the key %s, which nginx reads as %s: "+
				"a request for the pool matches no key and is answered 421 instead of reaching it", policy, u.Pool, raw, visible(read))
		}
	}
}

// visible spells out the control characters nginx makes of "\\t", "\\r" and "\\n".
func visible(s string) string {
	return "«" + strings.NewReplacer("\t", "<TAB>", "\r", "<CR>", "\n", "<LF>").Replace(s) + "»"
}

// checkAgentConfig fails unless the agent's config is JSON that names each
// pool behind the tier with its address.
func checkAgentConfig(t *testing.T, policy, agent string, upstreams []model.Upstream) {
	t.Helper()
	var cfg struct {
		Upstreams map[string]string `json:"upstreams"`
	}
	if err := json.Unmarshal([]byte(agent), &cfg); err != nil {
		t.Errorf("CachePolicy %s: the agent's config is not JSON: %v\n%s", policy, err, excerpt(agent))
		return
	}
	if len(cfg.Upstreams) != len(upstreams) {
		t.Errorf("CachePolicy %s: the agent's config has %d upstreams, want %d", policy, len(cfg.Upstreams), len(upstreams))
	}
}

// bootstrapJSON is a farm's static bootstrap with its routing inlined, as
// JSON (what the real Envoy checks).
func bootstrapJSON(t *testing.T, f model.Farm, routing envoy.Routing) []byte {
	t.Helper()
	b, err := envoy.StaticBootstrap(f, routing)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
