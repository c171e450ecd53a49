package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// The users' ConfigMaps and claims are not in the operator's cache (it holds
// only what it generates), so a missing one is not seen appearing: a pool
// that waits for one looks again this often.
const missingReferenceRecheck = 5 * time.Second

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get

// missingContent says which object a pool's content or app volumes name
// and the namespace lacks, or which file its health check asks for and its
// content ConfigMap lacks ("" when all are there). A Secret is not looked for:
// the operator reads no Secret, the kubelet does (a missing one keeps the
// worker in ContainerCreating unless the volume is optional), nor an
// optional ConfigMap. It reads the API server only for a pool that has no
// workers yet or waits for its content already: a pool that runs keeps
// running on what it mounted.
func missingContent(ctx context.Context, cached, live client.Reader, pool *v1.AppPool, m model.Pool) (string, error) {
	refs := namedObjects(m)
	if len(refs) == 0 {
		return "", nil
	}
	if !waitsForContent(pool) {
		err := cached.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: vocabulary.PoolName(m.Name)}, &appsv1.Deployment{})
		if err == nil || !apierrors.IsNotFound(err) {
			return "", client.IgnoreNotFound(err)
		}
	}
	for _, r := range refs {
		err := live.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: r.name}, r.obj)
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("%s %q does not exist in namespace %s; the pool starts once it does", r.what, r.name, m.Namespace), nil
		}
		if err != nil {
			return "", err
		}
	}
	// The first object named is the content's, read whole just above.
	if cm, ok := refs[0].obj.(*corev1.ConfigMap); ok && m.Content.Source == model.ContentConfigMap {
		return checkedFileMissing(m, cm), nil
	}
	return "", nil
}

// checkedFileMissing says why the workers of a pool of content alone could
// never pass their health check: the check's path names no file of the
// content ConfigMap cm, so nginx answers 403 or 404. A ConfigMap's keys are
// the files of one folder, so this is known before a worker starts, rather
// than as restarts after the start time limit.
func checkedFileMissing(m model.Pool, cm *corev1.ConfigMap) string {
	if m.App != nil {
		return "" // the app answers what the content lacks
	}
	has := func(name string) bool {
		_, inData := cm.Data[name]
		_, inBinary := cm.BinaryData[name]
		return inData || inBinary
	}
	path := m.Health.Path
	name := strings.TrimPrefix(path, "/")
	var lacks string
	switch {
	case path == "/" && (has("index.html") || has("index.htm")), path != "/" && has(name):
		return ""
	case path == "/":
		lacks = "has no index.html or index.htm"
	case strings.Contains(name, "/"):
		lacks = "cannot hold " + name + " (its keys are the files of one folder)"
	default:
		lacks = "has no file " + name
	}
	return fmt.Sprintf("content ConfigMap %q %s, which the health check's GET %s asks for, so its workers would never pass it: "+
		"add the file, or set healthCheck.path to one of its files%s; the pool starts once its check can pass",
		cm.Name, lacks, path, fileHint(cm))
}

// fileHint names a file of cm a health check could ask for, preferring a
// page: " (such as /about.html)", or " (it has none)".
func fileHint(cm *corev1.ConfigMap) string {
	names := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		names = append(names, k)
	}
	for k := range cm.BinaryData {
		names = append(names, k)
	}
	if len(names) == 0 {
		return " (it has none)"
	}
	slices.Sort(names)
	pick := names[0]
	for _, n := range names {
		if strings.HasSuffix(n, ".html") || strings.HasSuffix(n, ".htm") {
			pick = n
			break
		}
	}
	return " (such as /" + pick + ")"
}

// namedObject is an object a pool names that the operator may read.
type namedObject struct {
	what, name string
	obj        client.Object
}

// namedObjects are the ConfigMaps and claims a pool's workers cannot start
// without: its content's, then its app's non-optional volumes'.
func namedObjects(m model.Pool) []namedObject {
	var out []namedObject
	switch m.Content.Source {
	case model.ContentConfigMap:
		out = append(out, namedObject{"content ConfigMap", m.Content.Name, &corev1.ConfigMap{}})
	case model.ContentClaim:
		out = append(out, namedObject{"content PersistentVolumeClaim", m.Content.Name, &corev1.PersistentVolumeClaim{}})
	}
	if m.App == nil {
		return out
	}
	for _, v := range m.App.Volumes {
		switch {
		case v.Kind == model.VolumeConfigMap && !v.Optional:
			out = append(out, namedObject{fmt.Sprintf("app volume %s: ConfigMap", v.Name), v.Object, &corev1.ConfigMap{}})
		case v.Kind == model.VolumeClaim:
			out = append(out, namedObject{fmt.Sprintf("app volume %s: PersistentVolumeClaim", v.Name), v.Object, &corev1.PersistentVolumeClaim{}})
		}
	}
	return out
}

// waitsForContent: the pool's last verdict was a missing reference.
func waitsForContent(pool *v1.AppPool) bool {
	c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Reason == v1.ReasonInvalidReference
}
