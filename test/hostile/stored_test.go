package hostile_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/testutil"
)

// manifestSet is manifests applied together into one namespace.
type manifestSet struct {
	name      string
	manifests []string
}

// samplesIn is the samples in dir, one manifest per YAML document.
func samplesIn(t *testing.T, dir string) manifestSet {
	t.Helper()
	samples := manifestSet{name: "the samples"}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(string(b), -1) {
			if strings.Contains(doc, "kind:") {
				samples.manifests = append(samples.manifests, doc)
			}
		}
	}
	return samples
}

// storedSets are the shapes users have stored: the samples as they were with
// the earlier CRDs, and every manifest of the hostile table that the API
// server accepts.
func storedSets(t *testing.T) []manifestSet {
	t.Helper()
	sets := []manifestSet{samplesIn(t, filepath.Join("testdata", "earlier-crds", "samples"))}
	for _, tc := range hostileCases() {
		if tc.refused == nil && !tc.newFields {
			sets = append(sets, manifestSet{name: tc.name, manifests: tc.manifests})
		}
	}
	return sets
}

// TestObjectsStoredUnderEarlierCRDsStayTheSame upgrades the CRDs under stored
// objects, as a new release of the chart does: every object stored under the
// earlier CRDs (testdata/earlier-crds) must still validate, default the same
// way and render the same configs under the current ones.
func TestObjectsStoredUnderEarlierCRDsStayTheSame(t *testing.T) {
	cp, err := testutil.StartControlPlane(testutil.WithCRDs(filepath.Join("testdata", "earlier-crds")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the second control plane: %v", err)
		}
	})
	api, err := client.New(cp.Config, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		t.Fatal(err)
	}

	type storedSet struct {
		manifestSet
		ns      string
		objects []*unstructured.Unstructured // as the earlier CRDs stored them
		before  *rendered
	}
	var stored []storedSet
	for _, set := range storedSets(t) {
		s := storedSet{manifestSet: set, ns: testutil.NewNamespace(t, api, "stored-")}
		for _, m := range set.manifests {
			obj := decode(t, m)
			if err := testutil.CreateStrict(api, s.ns, obj); err != nil {
				t.Fatalf("%s: the earlier CRDs refuse a manifest: %v\n%s", set.name, shorten(err.Error()), excerpt(m))
			}
			s.objects = append(s.objects, obj)
		}
		s.before = renderNamespace(t, api, s.ns)
		stored = append(stored, s)
	}
	sentinel := stored[0].objects[len(stored[0].objects)-1] // the samples' WebFarm
	if sentinel.GetKind() != "WebFarm" {
		t.Fatalf("the samples' last object is a %s, want the WebFarm", sentinel.GetKind())
	}
	if err := patchStatusZeroGeneration(api, sentinel); err != nil {
		t.Fatalf("the earlier CRDs refuse status.observedGeneration 0, so the upgrade cannot be told apart: %v", err)
	}

	if err := cp.InstallCRDs(filepath.Join(testutil.RepoRoot(), "config", "crd", "bases")); err != nil {
		t.Fatal(err)
	}
	// The API server takes up a CRD's new schema a moment after the update.
	testutil.Eventually(t, 30*time.Second, func() error {
		if err := patchStatusZeroGeneration(api, sentinel); !apierrors.IsInvalid(err) {
			return fmt.Errorf("the current CRDs are not in force yet (status.observedGeneration 0 answered %v)", err)
		}
		return nil
	})

	for _, s := range stored {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fresh := testutil.NewNamespace(t, api, "fresh-")
			for _, was := range s.objects {
				key := was.GetKind() + " " + was.GetName()
				now := &unstructured.Unstructured{}
				now.SetGroupVersionKind(was.GroupVersionKind())
				if err := api.Get(ctx, client.ObjectKeyFromObject(was), now); err != nil {
					t.Fatalf("%s stored under the earlier CRDs cannot be read: %v", key, err)
				}
				if !keepsEverything(now.Object["spec"], was.Object["spec"]) {
					t.Errorf("%s reads differently under the current CRDs:\nstored: %v\nnow:    %v", key, was.Object["spec"], now.Object["spec"])
				}
				// The whole stored object, created anew, meets the current
				// schema (an update would only check what it changes).
				again := storedCopy(now, fresh)
				if err := api.Create(ctx, again, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
					t.Errorf("%s as stored no longer validates: %v", key, shorten(err.Error()))
				}
			}
			// The same manifests applied under the current CRDs default the same way.
			for i, m := range s.manifests {
				obj := decode(t, m)
				if err := testutil.CreateStrict(api, fresh, obj); err != nil {
					t.Fatalf("the current CRDs refuse a manifest the earlier ones accepted: %v\n%s", shorten(err.Error()), excerpt(m))
				}
				if was := s.objects[i]; !keepsEverything(obj.Object["spec"], was.Object["spec"]) {
					t.Errorf("%s %s defaults differently:\nearlier CRDs: %v\ncurrent CRDs: %v", was.GetKind(), was.GetName(), was.Object["spec"], obj.Object["spec"])
				}
			}
			compareRendered(t, s.before, renderNamespace(t, api, s.ns))
		})
	}
}

// keepsEverything: now holds every field of was with the same value; it may
// hold more (the defaults of fields added since, which must render as their
// absence did: compareRendered checks that).
func keepsEverything(now, was any) bool {
	switch w := was.(type) {
	case map[string]any:
		n, ok := now.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !keepsEverything(n[k], v) {
				return false
			}
		}
		return true
	case []any:
		n, ok := now.([]any)
		if !ok || len(n) != len(w) {
			return false
		}
		for i := range w {
			if !keepsEverything(n[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(now, was)
	}
}

// patchStatusZeroGeneration asks (as a dry run) to set a WebFarm's
// status.observedGeneration to 0, which only the earlier CRDs accept.
func patchStatusZeroGeneration(api client.Client, farm *unstructured.Unstructured) error {
	obj := farm.DeepCopy()
	return api.Status().Patch(context.Background(), obj,
		client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":0}}`)), client.DryRunAll)
}

// storedCopy is obj as a person would create it again in namespace ns:
// its name, labels, annotations and spec.
func storedCopy(obj *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range obj.Object {
		if k != "metadata" && k != "status" {
			out.Object[k] = v
		}
	}
	out.SetGroupVersionKind(obj.GroupVersionKind())
	out.SetName(obj.GetName())
	out.SetNamespace(ns)
	out.SetLabels(obj.GetLabels())
	out.SetAnnotations(obj.GetAnnotations())
	return out
}

// compareRendered fails on any difference between two renderings of one
// namespace: configs, models, the model's refusals and Kubernetes' refusals
// (child objects are rendered from the models and configs alone).
func compareRendered(t *testing.T, before, after *rendered) {
	t.Helper()
	b, a := before.configs(), after.configs()
	for _, name := range slices.Sorted(maps.Keys(b)) {
		if a[name] != b[name] {
			t.Errorf("the %s changed with the CRDs:\nbefore:\n%s\nafter:\n%s", name, excerpt(b[name]), excerpt(a[name]))
		}
	}
	if len(a) != len(b) {
		t.Errorf("%d configs rendered before the upgrade, %d after", len(b), len(a))
	}
	for what, pair := range map[string][2]any{
		"pool models":          {before.pools, after.pools},
		"cache models":         {before.caches, after.caches},
		"farm models":          {before.farms, after.farms},
		"Kubernetes' refusals": {before.applyErrs, after.applyErrs},
		"the model's refusals": {errorTexts(before.modelErrs), errorTexts(after.modelErrs)},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("the %s changed with the CRDs:\nbefore: %+v\nafter:  %+v", what, pair[0], pair[1])
		}
	}
}

func errorTexts(errs map[string]error) map[string]string {
	out := map[string]string{}
	for k, err := range errs {
		out[k] = err.Error()
	}
	return out
}
