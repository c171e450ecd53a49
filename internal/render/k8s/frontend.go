package k8s

import (
	"maps"
	"time"

	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"webfarm.dev/operator/internal/drain"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// BootstrapKey is the ConfigMap key holding the Envoy bootstrap.
const BootstrapKey = "envoy.json"

const envoyConfigDir = envoy.ConfigDir

// FrontendObjects are the children of a WebFarm.
type FrontendObjects struct {
	ServiceAccount      *corev1ac.ServiceAccountApplyConfiguration
	ConfigMap           *corev1ac.ConfigMapApplyConfiguration
	Service             *corev1ac.ServiceApplyConfiguration
	Deployment          *appsv1ac.DeploymentApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// frontendDrain runs cmd/envoy-drain in the Envoy container before the
// kubelet's SIGTERM: Envoy closes each open connection after its next
// response and keeps accepting until its Service's endpoints and every
// node's rules have forgotten it (the minimum), then until its
// connections are closed, within the grace period (the maximum).
func frontendDrain() *corev1ac.LifecycleApplyConfiguration {
	seconds := func(s int) string { return (time.Duration(s) * time.Second).String() }
	return corev1ac.Lifecycle().WithPreStop(corev1ac.LifecycleHandler().WithExec(corev1ac.ExecAction().WithCommand(
		drain.BinaryPath,
		"-admin=127.0.0.1:"+strconv.Itoa(envoy.AdminPort),
		"-min="+seconds(frontendDrainSeconds),
		"-max="+seconds(frontendDrainLimitSeconds),
	)))
}

// Frontend builds the Envoy frontend of a farm around its rendered bootstrap.
func Frontend(f model.Farm, bootstrap []byte) FrontendObjects {
	name := vocabulary.FrontendName(f.Name)
	owner := Owner{Kind: "WebFarm", Name: f.Name, UID: f.UID}
	fe := f.Frontend

	c := children{component: vocabulary.ComponentFrontend, instance: f.Name, name: name, namespace: f.Namespace, owner: owner}

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
		WithPorts(containerPort("http", envoy.HTTPPort), containerPort("status", vocabulary.FrontendStatusPort)).
		WithReadinessProbe(httpProbe(vocabulary.FrontendReadyPath, "status", 5*time.Second, time.Second, 3)).
		WithResources(resources(fe.CPUMilli, fe.MemoryBytes)).
		WithSecurityContext(restrictedContainer()).
		// A leaving frontend drains: a SIGTERM alone would cut its open
		// connections.
		WithLifecycle(frontendDrain()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(envoyConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"),
		)

	pod := corev1ac.PodSpec().
		WithServiceAccountName(name).
		WithVolumes(configMapVolume(name), tmpVolumeSource())
	for _, c := range f.Certificates() {
		volume, mount := certVolume(c)
		pod.WithVolumes(volume)
		container.WithVolumeMounts(mount)
	}
	if f.Platform.ControlTLS {
		volume, mount := identityVolume(f.Name)
		pod.WithVolumes(volume)
		container.WithVolumeMounts(mount)
	}
	if f.ServesHTTPS() {
		container.WithPorts(containerPort("https", envoy.HTTPSPort))
	}
	// The pod holds a copy of the container: it is complete by now.
	pod.WithContainers(container)

	config := envoy.SDSFiles(f)
	config[BootstrapKey] = string(bootstrap)
	service := frontendService(c.service(corev1.ServiceType(fe.ServiceType), fe.Port, fe.NodePort), fe.Service)
	if f.ServesHTTPS() {
		service.Spec.WithPorts(corev1ac.ServicePort().WithName("https").WithPort(fe.HTTPSPort).
			WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString("https")))
	}
	return FrontendObjects{
		ServiceAccount:      c.serviceAccount(),
		ConfigMap:           c.configMap(config),
		Service:             service,
		Deployment:          c.deployment(&fe.Replicas, ConfigHash(string(bootstrap)), pod, fe.Placement),
		PodDisruptionBudget: c.podDisruptionBudget(),
	}
}

// frontendService adds to the frontend's Service what its load balancer
// needs: the external traffic policy (Local by default, which keeps the
// client's address), the load balancer's class, its annotations and the
// networks it admits.
func frontendService(s *corev1ac.ServiceApplyConfiguration, e model.ServiceExposure) *corev1ac.ServiceApplyConfiguration {
	if e.ExternalTrafficPolicy != "" {
		s.Spec.WithExternalTrafficPolicy(corev1.ServiceExternalTrafficPolicy(e.ExternalTrafficPolicy))
	}
	if e.LoadBalancerClass != "" {
		s.Spec.WithLoadBalancerClass(e.LoadBalancerClass)
	}
	for _, r := range e.LoadBalancerSourceRanges {
		s.Spec.WithLoadBalancerSourceRanges(r.String())
	}
	if len(e.Annotations) > 0 {
		s.WithAnnotations(maps.Clone(e.Annotations))
	}
	return s
}

// certVolume mounts a certificate's Secret where Envoy reads it. The Secret
// is optional: while it is missing the pod starts (the directory is empty)
// and the other sites serve; Envoy reads it when it appears. Only the pod's
// group (fsGroup) reads the key. The operator itself never reads Secrets.
func certVolume(c model.Certificate) (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	name := envoy.CertVolumeName(c.Name)
	return corev1ac.Volume().WithName(name).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(c.SecretName).WithOptional(true).WithDefaultMode(0o440).
			WithItems(corev1ac.KeyToPath().WithKey("tls.crt").WithPath("tls.crt"),
				corev1ac.KeyToPath().WithKey("tls.key").WithPath("tls.key"))),
		corev1ac.VolumeMount().WithName(name).WithMountPath(envoy.CertDir(c.Name)).WithReadOnly(true)
}

// identityVolume mounts the farm's control identity where Envoy reads it.
// The Secret is not optional: without it the frontend could reach neither
// the xDS server nor the activator; the operator writes it before the
// Deployment.
func identityVolume(farm string) (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	const name = "control-identity"
	return corev1ac.Volume().WithName(name).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(vocabulary.FrontendIdentityName(farm)).WithDefaultMode(0o440)),
		corev1ac.VolumeMount().WithName(name).WithMountPath(envoy.IdentityDir).WithReadOnly(true)
}

// FrontendIdentity is the farm's control identity Secret: the certificate
// and key issued for it, and the CA its frontends verify the operator by.
// The operator writes it (server-side apply) and never reads it back.
func FrontendIdentity(namespace, farm, uid string, certPEM, keyPEM, caPEM []byte) *corev1ac.SecretApplyConfiguration {
	s := corev1ac.Secret(vocabulary.FrontendIdentityName(farm), namespace).
		WithType(corev1.SecretTypeTLS).
		WithData(map[string][]byte{vocabulary.IdentityCertKey: certPEM, vocabulary.IdentityKeyKey: keyPEM, vocabulary.IdentityCAKey: caPEM})
	return objectMeta(s, vocabulary.ComponentFrontend, farm, Owner{Kind: "WebFarm", Name: farm, UID: uid})
}

// FrontendURL is the in-cluster address of a farm's frontend Service.
func FrontendURL(f model.Farm) string {
	u := "http://" + vocabulary.FrontendName(f.Name) + "." + f.Namespace + ".svc"
	if f.Frontend.Port != 80 {
		u += ":" + strconv.Itoa(int(f.Frontend.Port))
	}
	return u
}

// envoyWorkers is one Envoy worker thread per whole CPU of the limit, at least one.
func envoyWorkers(cpuMilli int64) int64 { return max(1, (cpuMilli+999)/1000) }
