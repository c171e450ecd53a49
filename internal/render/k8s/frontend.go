package k8s

import (
	"time"

	"strconv"

	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
)

// BootstrapKey is the ConfigMap key holding the Envoy bootstrap.
const BootstrapKey = "envoy.json"

const envoyConfigDir = "/etc/envoy"

// FrontendObjects are the children of a WebFarm.
type FrontendObjects struct {
	ServiceAccount      *corev1ac.ServiceAccountApplyConfiguration
	ConfigMap           *corev1ac.ConfigMapApplyConfiguration
	Service             *corev1ac.ServiceApplyConfiguration
	Deployment          *appsv1ac.DeploymentApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// Frontend builds the Envoy frontend of a farm around its rendered bootstrap.
func Frontend(f model.Farm, bootstrap []byte) FrontendObjects {
	name := FrontendName(f.Name)
	owner := Owner{Kind: "WebFarm", Name: f.Name, UID: f.UID}
	fe := f.Frontend

	c := children{component: ComponentFrontend, instance: f.Name, name: name, namespace: f.Namespace, owner: owner}

	args := append([]string{
		"--config-path", envoyConfigDir + "/" + BootstrapKey,
		"--disable-hot-restart",
		// Envoy starts a worker per CPU of the node unless told; its CPU
		// limit is what it may use.
		"--concurrency", strconv.FormatInt(envoyWorkers(fe.CPUMilli), 10),
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
		// A leaving frontend keeps accepting until its Service's endpoints
		// and every node's rules have forgotten it, then stops.
		WithLifecycle(drainPause(drainSeconds)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(envoyConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"),
		)

	pod := corev1ac.PodSpec().
		WithServiceAccountName(name).
		WithContainers(container).
		WithVolumes(configMapVolume(name), tmpVolumeSource())
	return FrontendObjects{
		ServiceAccount:      c.serviceAccount(),
		ConfigMap:           c.configMap(map[string]string{BootstrapKey: string(bootstrap)}),
		Service:             c.service(corev1.ServiceType(fe.ServiceType), fe.Port, fe.NodePort),
		Deployment:          c.deployment(&fe.Replicas, ConfigHash(string(bootstrap)), pod),
		PodDisruptionBudget: c.podDisruptionBudget(),
	}
}

// FrontendURL is the in-cluster address of a farm's frontend Service.
func FrontendURL(f model.Farm) string {
	u := "http://" + FrontendName(f.Name) + "." + f.Namespace + ".svc"
	if f.Frontend.Port != 80 {
		u += ":" + strconv.Itoa(int(f.Frontend.Port))
	}
	return u
}

// envoyWorkers is one Envoy worker thread per whole CPU of the limit, at least one.
func envoyWorkers(cpuMilli int64) int64 { return max(1, (cpuMilli+999)/1000) }
