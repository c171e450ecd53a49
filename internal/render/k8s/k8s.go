// Package k8s builds the Kubernetes objects of farms, pools and cache tiers as
// server-side apply configurations: each names only the fields the operator
// owns, so API defaults and other writers (the autoscaler's replicas, a
// GitOps tool's labels) never fight with it.
package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Labels, annotations and object names are in internal/vocabulary.
const (
	nonRootUID    = 65532
	configVolume  = "config"
	tmpVolume     = "tmp"
	contentVolume = "content"
	cacheVolume   = "cache"
	drainSeconds  = 5 // preStop pause so the frontend stops routing before nginx exits
	// frontendDrainSeconds keeps a leaving frontend accepting until the
	// Service's endpoints and every node's rules have forgotten it: on a
	// busy node kube-proxy can take more than drainSeconds, and a client
	// whose connection reached an Envoy that then exited waits in vain.
	frontendDrainSeconds = 10
	// frontendDrainLimitSeconds ends a frontend's drain while its open
	// connections' clients still hold them (idle keep-alives): Envoy then
	// exits with 5 s of the grace period left.
	frontendDrainLimitSeconds = gracePeriodSecs - 5
	// appDrainSeconds keeps a pool's application running while its nginx
	// drains and then finishes the requests it has (nginx quits gracefully
	// after its own pause): an application that stopped first would turn
	// those requests into 502s.
	appDrainSeconds = int64(model.WorkerDrainPause / time.Second)
	// gracePeriodSecs is the frontends' and cache tiers' (Kubernetes'
	// default, stated so drain time is explicit); a pool's is its
	// healthCheck.shutdownTimeLimit.
	gracePeriodSecs = 30
)

// Owner identifies the custom resource that owns generated objects.
type Owner struct {
	Kind, Name, UID string
}

func (o Owner) reference() *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1.GroupVersion.String()).WithKind(o.Kind).WithName(o.Name).
		WithUID(types.UID(o.UID)).WithController(true).WithBlockOwnerDeletion(true)
}

// SelectorLabels select the pods of one component instance.
func SelectorLabels(component, instance string) map[string]string {
	return map[string]string{vocabulary.LabelName: "webfarm-" + component, vocabulary.LabelInstance: instance}
}

func objectLabels(component, instance string) map[string]string {
	l := SelectorLabels(component, instance)
	l[vocabulary.LabelComponent] = component
	l[vocabulary.LabelManagedBy] = vocabulary.ManagedBy
	return l
}

// ConfigHash is a short digest of a rendered config; it is an annotation on the
// pod template so that a config change rolls the pods.
func ConfigHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// restrictedPod is the pod-level security context of every generated pod: the
// Kubernetes "restricted" Pod Security Standard.
func restrictedPod() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).WithRunAsUser(nonRootUID).WithRunAsGroup(nonRootUID).WithFSGroup(nonRootUID).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

func restrictedContainer() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

func resources(cpuMilli, memoryBytes int64) *corev1ac.ResourceRequirementsApplyConfiguration {
	// Requests equal limits: each worker gets a fixed share of a processor, as
	// IIS processor affinity pins a worker process.
	list := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memoryBytes, resource.BinarySI),
	}
	return corev1ac.ResourceRequirements().WithRequests(list).WithLimits(list)
}

func tmpVolumeSource() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(tmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
		WithSizeLimit(resource.MustParse("64Mi")))
}

func configMapVolume(name string) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(configVolume).WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(name))
}

func httpProbe(path, port string, period, timeout time.Duration, failures int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(port))).
		WithPeriodSeconds(wholeSeconds(period)).WithTimeoutSeconds(wholeSeconds(timeout)).
		WithFailureThreshold(failures)
}

func tcpProbe(port string, period, timeout time.Duration, failures int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString(port))).
		WithPeriodSeconds(wholeSeconds(period)).WithTimeoutSeconds(wholeSeconds(timeout)).
		WithFailureThreshold(failures)
}

func wholeSeconds(d time.Duration) int32 {
	return max(1, int32((d+time.Second-1)/time.Second))
}

func containerPort(name string, port int32) *corev1ac.ContainerPortApplyConfiguration {
	return corev1ac.ContainerPort().WithName(name).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)
}

func objectMeta[T interface {
	WithLabels(map[string]string) T
	WithOwnerReferences(...*metav1ac.OwnerReferenceApplyConfiguration) T
}](obj T, component, instance string, owner Owner) T {
	return obj.WithLabels(objectLabels(component, instance)).WithOwnerReferences(owner.reference())
}
