package k8s

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/vocabulary"
)

// NginxConfigKey is the ConfigMap key holding nginx.conf.
const NginxConfigKey = nginx.ConfigFile

// PoolObjects are the children of an AppPool.
type PoolObjects struct {
	ServiceAccount      *corev1ac.ServiceAccountApplyConfiguration
	ConfigMap           *corev1ac.ConfigMapApplyConfiguration
	Service             *corev1ac.ServiceApplyConfiguration
	Deployment          *appsv1ac.DeploymentApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// Pool builds an AppPool's workers around their rendered nginx.conf.
func Pool(p model.Pool, nginxConf string) PoolObjects {
	name := vocabulary.PoolName(p.Name)
	owner := Owner{Kind: "AppPool", Name: p.Name, UID: p.UID}
	c := children{component: vocabulary.ComponentPool, instance: p.Name, name: name, namespace: p.Namespace, owner: owner}

	nginxCPU, nginxMemory := p.CPUMilli, p.MemoryBytes
	if p.App != nil {
		// The app does the work; nginx serves files and proxies.
		nginxCPU, nginxMemory = p.AppNginxCPUMilli(), 64<<20
	}
	worker := nginxContainer(p.Platform.Images, nginxCPU, nginxMemory, workerPorts(p)...).
		WithReadinessProbe(workerReadiness(p)).
		WithLifecycle(drainPause(drainSeconds))
	if p.App == nil {
		// nginx is the worker: its ping is a request for the content.
		worker = worker.WithStartupProbe(workerStartup(p))
		if p.Health.Pinging {
			worker = worker.WithLivenessProbe(workerLiveness(p))
		}
	}
	volumes := []*corev1ac.VolumeApplyConfiguration{configMapVolume(name), tmpVolumeSource()}
	spec := corev1ac.PodSpec()

	switch p.Content.Source {
	case model.ContentConfigMap:
		volumes = append(volumes, corev1ac.Volume().WithName(contentVolume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(p.Content.Name)))
	case model.ContentClaim:
		volumes = append(volumes, corev1ac.Volume().WithName(contentVolume).
			WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(p.Content.Name).WithReadOnly(true)))
	case model.ContentImage:
		volumes = append(volumes, corev1ac.Volume().WithName(contentVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
		spec = spec.WithInitContainers(corev1ac.Container().WithName("content").
			WithImage(p.Content.Name).WithImagePullPolicy(corev1.PullPolicy(p.Platform.Images.PullPolicy)).
			WithCommand("cp", "-R", p.Content.ImagePath+"/.", nginx.ContentDir+"/").
			WithResources(resources(100, 64<<20)).
			WithSecurityContext(restrictedContainer()).
			WithVolumeMounts(corev1ac.VolumeMount().WithName(contentVolume).WithMountPath(nginx.ContentDir)))
	}
	if p.Content.Source != model.ContentNone {
		worker = worker.WithVolumeMounts(corev1ac.VolumeMount().WithName(contentVolume).WithMountPath(nginx.ContentDir).WithReadOnly(true))
	}
	containers := []*corev1ac.ContainerApplyConfiguration{worker}
	if a := p.App; a != nil {
		app := corev1ac.Container().WithName("app").
			WithImage(a.Image).WithImagePullPolicy(corev1.PullPolicy(p.Platform.Images.PullPolicy)).
			WithPorts(containerPort("app", a.Port)).
			WithResources(resources(p.CPUMilli, p.MemoryBytes)).
			WithSecurityContext(restrictedContainer()).
			WithLifecycle(drainPause(appDrainSeconds)).
			WithStartupProbe(workerStartup(p)).
			WithVolumeMounts(corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"))
		if p.Health.Pinging {
			app = app.WithLivenessProbe(workerLiveness(p))
		}
		if a.Protocol == model.AppGRPC {
			// The gRPC health checking protocol, on the app's own port.
			app = app.WithReadinessProbe(corev1ac.Probe().
				WithGRPC(corev1ac.GRPCAction().WithPort(a.Port)).
				WithPeriodSeconds(wholeSeconds(p.Health.Interval)).WithTimeoutSeconds(wholeSeconds(p.Health.Timeout)).
				WithFailureThreshold(p.Health.FailureThreshold))
		}
		if len(a.Args) > 0 {
			app = app.WithArgs(a.Args...)
		}
		for _, e := range a.Env {
			app = app.WithEnv(envVar(e))
		}
		for _, v := range a.Volumes {
			volumes = append(volumes, appVolume(v))
			app = app.WithVolumeMounts(corev1ac.VolumeMount().WithName(appVolumePrefix + v.Name).
				WithMountPath(v.MountPath).WithReadOnly(v.ReadOnly))
		}
		containers = append(containers, app)
	}

	// nginx.conf and the scripts it loads, in one ConfigMap; pods roll when any changes.
	scripts := nginx.PoolScripts(p)
	files := map[string]string{NginxConfigKey: nginxConf}
	hashed := []string{nginxConf}
	for _, name := range slices.Sorted(maps.Keys(scripts)) {
		files[name] = scripts[name]
		hashed = append(hashed, name, scripts[name])
	}
	// The pool's own identity: its ServiceAccount, with the API token only
	// when the pool asks for it.
	spec = spec.WithServiceAccountName(name)
	dep := c.deployment(p.Replicas, ConfigHash(hashed...), spec.WithContainers(containers...).WithVolumes(volumes...), p.Placement)
	dep.Spec.WithStrategy(rollingUpdate(p.Rollout.MaxSurge, p.Rollout.MaxUnavailable))
	// IIS ShutdownTimeLimit: a leaving worker drains and stops within it.
	dep.Spec.Template.Spec.WithTerminationGracePeriodSeconds(int64(wholeSeconds(p.Health.ShutdownTimeLimit)))
	if p.MountAPIToken {
		dep.Spec.Template.Spec.WithAutomountServiceAccountToken(true)
	}

	return PoolObjects{
		ServiceAccount:      c.serviceAccount(),
		ConfigMap:           c.configMap(files),
		Service:             c.service(corev1.ServiceTypeClusterIP, 80, 0),
		Deployment:          dep,
		PodDisruptionBudget: c.podDisruptionBudget(),
	}
}

// envVar is an app's environment variable: its value, or the key of a
// Secret or ConfigMap the kubelet reads.
func envVar(e model.EnvVar) *corev1ac.EnvVarApplyConfiguration {
	v := corev1ac.EnvVar().WithName(e.Name)
	switch r := e.From; {
	case r == nil:
		return v.WithValue(e.Value)
	case r.Secret:
		return v.WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(
			corev1ac.SecretKeySelector().WithName(r.Name).WithKey(r.Key).WithOptional(r.Optional)))
	default:
		return v.WithValueFrom(corev1ac.EnvVarSource().WithConfigMapKeyRef(
			corev1ac.ConfigMapKeySelector().WithName(r.Name).WithKey(r.Key).WithOptional(r.Optional)))
	}
}

// appVolumePrefix keeps the names of an app's volumes apart from the
// pod's own (config, tmp, content).
const appVolumePrefix = "app-"

// appVolume is the pod volume of an app's volume: the object by name, for
// the kubelet to read (the operator reads no Secret).
func appVolume(v model.Volume) *corev1ac.VolumeApplyConfiguration {
	vol := corev1ac.Volume().WithName(appVolumePrefix + v.Name)
	switch v.Kind {
	case model.VolumeSecret:
		return vol.WithSecret(corev1ac.SecretVolumeSource().WithSecretName(v.Object).WithOptional(v.Optional))
	case model.VolumeConfigMap:
		return vol.WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(v.Object).WithOptional(v.Optional))
	default:
		return vol.WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(v.Object).WithReadOnly(v.ReadOnly))
	}
}

// workerPorts are a worker's nginx ports. "http" is what the Service (and so
// the frontend) reaches: HTTP/2 without TLS when the app speaks HTTP/2 or
// gRPC, with HTTP/1.1 then on "http1" for the kubelet's probes.
func workerPorts(p model.Pool) []*corev1ac.ContainerPortApplyConfiguration {
	if p.HTTP2() {
		return []*corev1ac.ContainerPortApplyConfiguration{
			containerPort("http", nginx.H2CPort), containerPort("http1", nginx.HTTPPort), containerPort("status", nginx.StatusPort),
		}
	}
	return []*corev1ac.ContainerPortApplyConfiguration{containerPort("http", nginx.HTTPPort), containerPort("status", nginx.StatusPort)}
}

// workerReadiness is the GET of the pool's health check over HTTP/1.1 (which
// nginx passes to an HTTP/2 app as HTTP/2). A gRPC app is checked by the
// gRPC health checking protocol instead, and nginx only for being up.
func workerReadiness(p model.Pool) *corev1ac.ProbeApplyConfiguration {
	h := p.Health
	switch {
	case p.App != nil && p.App.Protocol == model.AppGRPC:
		return httpProbe(nginx.LivenessURI, "status", h.Interval, h.Timeout, h.FailureThreshold)
	case p.HTTP2():
		return httpProbe(h.Path, "http1", h.Interval, h.Timeout, h.FailureThreshold)
	}
	return httpProbe(h.Path, "http", h.Interval, h.Timeout, h.FailureThreshold)
}

// workerPing is the request by which the kubelet pings a worker's
// application (IIS worker pinging), reaching the application itself: the
// check's path on the app's own port; the gRPC health checking protocol for a
// gRPC app; for an HTTP/2 app, whose port the kubelet's HTTP/1.1 probes cannot
// speak to, the path through nginx's HTTP/1.1 port (nginx's own liveness
// probe restarts a hung nginx first, within 32 s). Without an app nginx is
// the worker, and its ping is a request for the content at the check's path.
func workerPing(p model.Pool) *corev1ac.ProbeApplyConfiguration {
	get := func(port intstr.IntOrString) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(p.Health.Path).WithPort(port))
	}
	switch {
	case p.App == nil:
		return get(intstr.FromString("http"))
	case p.App.Protocol == model.AppGRPC:
		return corev1ac.Probe().WithGRPC(corev1ac.GRPCAction().WithPort(p.App.Port))
	case p.App.Protocol == model.AppHTTP2:
		// A probe names only its own container's ports: nginx's by number.
		return get(intstr.FromInt32(nginx.HTTPPort))
	}
	return get(intstr.FromString("app"))
}

// pingKillGraceSeconds is the grace period of a worker the kubelet restarts
// for a failed ping or start: a hung worker has nothing to drain, so its
// drain pause is cut short, and the kubelet kills it 2 s (its least grace
// period) after.
const pingKillGraceSeconds = 1

// workerLiveness restarts a hung worker: one ping left unanswered for the
// ping response time is enough, as in IIS, so a worker that hangs is
// restarted within pingInterval + pingResponseTime and about 3 s to kill it.
func workerLiveness(p model.Pool) *corev1ac.ProbeApplyConfiguration {
	return workerPing(p).
		WithPeriodSeconds(wholeSeconds(p.Health.PingInterval)).WithTimeoutSeconds(wholeSeconds(p.Health.PingResponseTime)).
		WithFailureThreshold(1).WithTerminationGracePeriodSeconds(pingKillGraceSeconds)
}

// workerStartup holds the ping off while a worker starts (IIS
// StartupTimeLimit): it pings every second, with a second to answer, and
// restarts a worker that has not answered one within the limit. Its first
// answer starts the ping and the check of whether it receives traffic.
func workerStartup(p model.Pool) *corev1ac.ProbeApplyConfiguration {
	return workerPing(p).
		WithPeriodSeconds(1).WithTimeoutSeconds(1).
		WithFailureThreshold(wholeSeconds(p.Health.StartupTimeLimit)).WithTerminationGracePeriodSeconds(pingKillGraceSeconds)
}

// nginxContainer is the nginx of a pool worker or a cache tier.
func nginxContainer(images model.Images, cpuMilli, memoryBytes int64, ports ...*corev1ac.ContainerPortApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().WithName("nginx").
		WithImage(images.Nginx).WithImagePullPolicy(corev1.PullPolicy(images.PullPolicy)).
		WithCommand("nginx", "-c", nginx.ConfigDir+"/"+nginx.ConfigFile).
		WithPorts(ports...).
		WithLivenessProbe(httpProbe(nginx.LivenessURI, "status", 10*time.Second, 2*time.Second, 3)).
		WithResources(resources(cpuMilli, memoryBytes)).
		WithSecurityContext(restrictedContainer()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(nginx.ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath(nginx.TmpDir),
		)
}

func selector(component, instance string) *metav1ac.LabelSelectorApplyConfiguration {
	return metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(component, instance))
}

// noDowntimeRollout starts a new pod before stopping an old one.
func noDowntimeRollout() *appsv1ac.DeploymentStrategyApplyConfiguration { return rollingUpdate(1, 0) }

// rollingUpdate replaces pods starting up to surge new ones above the count
// and stopping up to unavailable old ones before their replacements are Ready.
func rollingUpdate(surge, unavailable int32) *appsv1ac.DeploymentStrategyApplyConfiguration {
	return appsv1ac.DeploymentStrategy().WithType("RollingUpdate").
		WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
			WithMaxUnavailable(intstr.FromInt32(unavailable)).WithMaxSurge(intstr.FromInt32(surge)))
}
