package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/testutil"
)

// The WebFarm reconciler writes, in its status write, the version the
// running operator's xDS server serves the farm and what the frontend stats
// collector stored of its frontends: accepted, then refused.
func TestAFarmsStatusShowsWhichConfigurationEachFrontendRuns(t *testing.T) {
	ns := newNamespace(t)
	create(t, &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contoso"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "web"}}},
	}}})
	var served string
	testutil.Eventually(t, timeout, func() error {
		r, ok := xdsServer.Routing(ns + "/contoso")
		if !ok {
			return fmt.Errorf("the farm's routing is not served yet")
		}
		served = r.Version
		return nil
	})
	waitForCondition(t, ns, "contoso", v1.ConditionReady)
	store := &observations.Store{}
	recorder := events.NewFakeRecorder(10)
	reconciler := &controllers.WebFarmReconciler{Client: k8sClient, Applier: &apply.Applier{Client: k8sClient}, Platform: platform,
		Recorder: recorder, Observations: store, XDS: xdsServer}
	farm := types.NamespacedName{Namespace: ns, Name: "contoso"}
	check := func(frontends []observations.FrontendConfig, status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		store.SetFrontendConfigs(farm, frontends)
		if _, err := reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: farm}); err != nil {
			t.Fatal(err)
		}
		var got v1.WebFarm
		if err := get(&got, ns, "contoso"); err != nil {
			t.Fatal(err)
		}
		want := v1.FrontendConfigStatus{Version: served}
		for _, f := range frontends {
			want.Frontends = append(want.Frontends, v1.FrontendVersion{Pod: f.Pod, Version: f.Version})
		}
		if fmt.Sprint(got.Status.FrontendConfig) != fmt.Sprint(want) {
			t.Errorf("status.frontendConfig %+v, want %+v", got.Status.FrontendConfig, want)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, controllers.ConditionConfigAccepted)
		if cond == nil || cond.Status != status || cond.Reason != reason || !strings.Contains(cond.Message, message) {
			t.Errorf("condition %+v, want %s %s saying %q", cond, status, reason, message)
		}
	}
	check([]observations.FrontendConfig{{Pod: "contoso-frontend-a", Version: served}, {Pod: "contoso-frontend-b", Version: served}},
		metav1.ConditionTrue, controllers.ReasonConfigAccepted, "all 2 frontends run version "+served)
	check([]observations.FrontendConfig{{Pod: "contoso-frontend-a", Version: served}, {Pod: "contoso-frontend-b", Version: "older", Rejected: 1}},
		metav1.ConditionFalse, controllers.ReasonConfigRejected, "frontend contoso-frontend-b runs version older and refused a later one")
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "Warning") || !strings.Contains(e, "contoso-frontend-b") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no Warning event")
	}
}
