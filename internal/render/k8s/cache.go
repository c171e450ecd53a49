package k8s

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
)

// CacheObjects are the children of a CachePolicy that routes use.
type CacheObjects struct {
	ConfigMap  *corev1ac.ConfigMapApplyConfiguration
	Service    *corev1ac.ServiceApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
}

// cacheOverheadBytes is the memory a cache pod needs besides its cache: nginx
// itself and its buffers. The in-memory cache volume counts against the limit.
const cacheOverheadBytes = 64 << 20

// Cache builds a cache tier around its rendered nginx.conf.
func Cache(c model.Cache, nginxConf string) CacheObjects {
	name := CacheName(c.Name)
	owner := Owner{Kind: "CachePolicy", Name: c.Name, UID: c.UID}

	cm := objectMeta(corev1ac.ConfigMap(name, c.Namespace), componentCache, c.Name, owner).
		WithData(map[string]string{NginxConfigKey: nginxConf})

	svc := objectMeta(corev1ac.Service(name, c.Namespace), componentCache, c.Name, owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(componentCache, c.Name)).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80).WithProtocol(corev1.ProtocolTCP).
				WithTargetPort(intstr.FromString("http"))))

	worker := nginxContainer(c.Platform.Images, c.CPUMilli, c.MemorySizeBytes+cacheOverheadBytes).
		WithReadinessProbe(httpProbe("/healthz", "status", 5*time.Second, time.Second, 3)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(cacheVolume).WithMountPath(nginx.CacheDir))

	template := corev1ac.PodTemplateSpec().
		WithLabels(objectLabels(componentCache, c.Name)).
		WithAnnotations(map[string]string{ConfigHashKey: ConfigHash(nginxConf)}).
		WithSpec(corev1ac.PodSpec().
			WithAutomountServiceAccountToken(false).
			WithEnableServiceLinks(false).
			WithTerminationGracePeriodSeconds(gracePeriodSecs).
			WithSecurityContext(restrictedPod()).
			WithContainers(worker).
			WithVolumes(configMapVolume(name), tmpVolumeSource(),
				corev1ac.Volume().WithName(cacheVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
					WithMedium(corev1.StorageMediumMemory).
					WithSizeLimit(*resource.NewQuantity(c.MemorySizeBytes, resource.BinarySI)))))

	dep := objectMeta(appsv1ac.Deployment(name, c.Namespace), componentCache, c.Name, owner).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(c.Replicas).
			WithSelector(selector(componentCache, c.Name)).
			WithStrategy(noDowntimeRollout()).
			WithTemplate(template))
	return CacheObjects{ConfigMap: cm, Service: svc, Deployment: dep}
}
