package k8s

import (
	"time"

	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
)

// BootstrapKey is the ConfigMap key holding the Envoy bootstrap.
const BootstrapKey = "envoy.json"

const envoyConfigDir = "/etc/envoy"

// FrontendObjects are the children of a WebFarm.
type FrontendObjects struct {
	ServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	ConfigMap      *corev1ac.ConfigMapApplyConfiguration
	Service        *corev1ac.ServiceApplyConfiguration
	Deployment     *appsv1ac.DeploymentApplyConfiguration
}

// Frontend builds the Envoy frontend of a farm around its rendered bootstrap.
func Frontend(f model.Farm, bootstrap []byte) FrontendObjects {
	name := FrontendName(f.Name)
	owner := Owner{Kind: "WebFarm", Name: f.Name, UID: f.UID}
	fe := f.Frontend

	sa := objectMeta(corev1ac.ServiceAccount(name, f.Namespace), componentFront, f.Name, owner).
		WithAutomountServiceAccountToken(false)

	cm := objectMeta(corev1ac.ConfigMap(name, f.Namespace), componentFront, f.Name, owner).
		WithData(map[string]string{BootstrapKey: string(bootstrap)})

	port := corev1ac.ServicePort().WithName("http").WithPort(fe.Port).WithProtocol(corev1.ProtocolTCP).
		WithTargetPort(intstr.FromString("http"))
	if fe.NodePort != 0 {
		port = port.WithNodePort(fe.NodePort)
	}
	svc := objectMeta(corev1ac.Service(name, f.Namespace), componentFront, f.Name, owner).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceType(fe.ServiceType)).
			WithSelector(SelectorLabels(componentFront, f.Name)).
			WithPorts(port))

	args := append([]string{
		"--config-path", envoyConfigDir + "/" + BootstrapKey,
		"--disable-hot-restart",
		"--drain-time-s", strconv.Itoa(drainSeconds),
		"--log-level", "info",
	}, envoy.NodeIDArgs("$(POD_NAME)")...)
	// Fields the API server would default (the fieldRef's apiVersion) are stated:
	// what the operator owns must read back as applied, or every reconcile writes.
	container := corev1ac.Container().WithName("envoy").
		WithImage(f.Platform.Images.Envoy).WithImagePullPolicy(corev1.PullPolicy(f.Platform.Images.PullPolicy)).
		WithCommand("envoy").WithArgs(args...).
		WithEnv(corev1ac.EnvVar().WithName("POD_NAME").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath("metadata.name")))).
		WithPorts(containerPort("http", envoy.HTTPPort), containerPort("status", envoy.StatusPort)).
		WithReadinessProbe(httpProbe(envoy.ReadyPath, "status", 5*time.Second, time.Second, 3)).
		WithResources(resources(fe.CPUMilli, fe.MemoryBytes)).
		WithSecurityContext(restrictedContainer()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(envoyConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"),
		)

	template := corev1ac.PodTemplateSpec().
		WithLabels(objectLabels(componentFront, f.Name)).
		WithAnnotations(map[string]string{ConfigHashKey: ConfigHash(string(bootstrap))}).
		WithSpec(corev1ac.PodSpec().
			WithServiceAccountName(name).
			WithAutomountServiceAccountToken(false).
			WithEnableServiceLinks(false).
			WithTerminationGracePeriodSeconds(gracePeriodSecs).
			WithSecurityContext(restrictedPod()).
			WithContainers(container).
			WithVolumes(configMapVolume(name), tmpVolumeSource()))

	dep := objectMeta(appsv1ac.Deployment(name, f.Namespace), componentFront, f.Name, owner).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(fe.Replicas).
			WithSelector(selector(componentFront, f.Name)).
			WithStrategy(noDowntimeRollout()).
			WithTemplate(template))
	return FrontendObjects{ServiceAccount: sa, ConfigMap: cm, Service: svc, Deployment: dep}
}

// FrontendURL is the in-cluster address of a farm's frontend Service.
func FrontendURL(f model.Farm) string {
	u := "http://" + FrontendName(f.Name) + "." + f.Namespace + ".svc"
	if f.Frontend.Port != 80 {
		u += ":" + strconv.Itoa(int(f.Frontend.Port))
	}
	return u
}
