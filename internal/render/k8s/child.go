package k8s

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// children builds the objects one custom resource owns: they share a name,
// a namespace, labels and an owner reference.
type children struct {
	component string // frontend, pool or cache
	instance  string // the owner's name
	name      string // the children's name
	namespace string
	owner     Owner
}

// podDisruptionBudget lets a voluntary disruption (a node drain) take one of
// the pods at a time, so the rest keep serving.
func (c children) podDisruptionBudget() *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return objectMeta(policyv1ac.PodDisruptionBudget(c.name, c.namespace), c.component, c.instance, c.owner).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(selector(c.component, c.instance)))
}

// drainPause keeps a leaving pod serving while the Service's endpoints and
// the frontends forget it: the container is stopped only after it.
func drainPause(seconds int64) *corev1ac.LifecycleApplyConfiguration {
	return corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().WithSleep(corev1ac.SleepAction().WithSeconds(seconds)))
}

func (c children) configMap(data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return objectMeta(corev1ac.ConfigMap(c.name, c.namespace), c.component, c.instance, c.owner).
		WithData(data)
}

// serviceAccount is an identity for pods that never call the Kubernetes API.
func (c children) serviceAccount() *corev1ac.ServiceAccountApplyConfiguration {
	return objectMeta(corev1ac.ServiceAccount(c.name, c.namespace), c.component, c.instance, c.owner).
		WithAutomountServiceAccountToken(false)
}

// service exposes the pods' "http" port.
func (c children) service(serviceType corev1.ServiceType, port, nodePort int32) *corev1ac.ServiceApplyConfiguration {
	p := corev1ac.ServicePort().WithName("http").WithPort(port).WithProtocol(corev1.ProtocolTCP).
		WithTargetPort(intstr.FromString("http"))
	if nodePort != 0 {
		p = p.WithNodePort(nodePort)
	}
	spec := corev1ac.ServiceSpec().
		WithType(serviceType).
		WithSelector(SelectorLabels(c.component, c.instance)).
		WithPorts(p)
	return objectMeta(corev1ac.Service(c.name, c.namespace), c.component, c.instance, c.owner).WithSpec(spec)
}

// deployment runs pods of the given spec where the placement says; replicas
// nil leaves the count to another writer. configHash rolls the pods when
// their config changes.
func (c children) deployment(replicas *int32, configHash string, pod *corev1ac.PodSpecApplyConfiguration, placement model.Placement) *appsv1ac.DeploymentApplyConfiguration {
	place(pod, placement, SelectorLabels(c.component, c.instance))
	template := corev1ac.PodTemplateSpec().
		WithLabels(objectLabels(c.component, c.instance)).
		WithAnnotations(map[string]string{vocabulary.ConfigHashKey: configHash}).
		WithSpec(pod.
			WithAutomountServiceAccountToken(false).
			WithEnableServiceLinks(false).
			WithTerminationGracePeriodSeconds(gracePeriodSecs).
			WithSecurityContext(restrictedPod()))
	spec := appsv1ac.DeploymentSpec().
		WithSelector(selector(c.component, c.instance)).
		WithStrategy(noDowntimeRollout()).
		WithTemplate(template)
	if replicas != nil {
		spec = spec.WithReplicas(*replicas)
	}
	return objectMeta(appsv1ac.Deployment(c.name, c.namespace), c.component, c.instance, c.owner).WithSpec(spec)
}
