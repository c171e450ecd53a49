package v1alpha1_test

import (
	"strings"
	"testing"
)

func TestAppPoolManifests(t *testing.T) { checkManifests(t, "AppPool", appPoolCases) }

// volumes is a patch that gives the base AppPool's app these volumes (flow style).
func volumes(items string) string { return "spec: {app: {volumes: [" + items + "]}}" }

// appPoolCases are AppPool manifests, each the base AppPool (bases) with a
// patch, and what the API server answers.
var appPoolCases = []manifestCase{
	// Default documents.
	accepted("a pool's own default documents are accepted", `spec: {content: {configMap: {name: site}, defaultDocuments: [Default.htm, default.aspx, index.html]}}`),
	refused("a pool's default document with a slash is refused", `spec: {content: {configMap: {name: site}, defaultDocuments: [a/index.html]}}`,
		"spec.content.defaultDocuments[0]", "should match"),
	refused("a pool's default document listed twice is refused", `spec: {content: {configMap: {name: site}, defaultDocuments: [index.html, index.html]}}`,
		"spec.content.defaultDocuments", "Duplicate value"),
	refused("an AppPool with neither content nor an app is refused", `spec: {app: null, replicas: 3}`, "an AppPool needs content, an app, or both"),
	refused("an environment variable with both a value and valueFrom is refused", `spec: {app: {env: [{name: PASSWORD, value: hunter2, valueFrom: {secretKeyRef: {name: db, key: password}}}]}}`, "spec.app.env[0]", "set value or valueFrom, not both"),
	refused("valueFrom naming both a Secret and a ConfigMap is refused", `
		spec:
		  app:
		    env:
		    - name: PASSWORD
		      valueFrom:
		        secretKeyRef: {name: db, key: password}
		        configMapKeyRef: {name: db, key: password}
	`,
		"spec.app.env[0].valueFrom", "set exactly one of secretKeyRef and configMapKeyRef"),
	refused("an app volume whose name is not a DNS label is refused", volumes(`{name: DB_Secret, mountPath: /etc/db, secret: {name: db}}`), `spec.app.volumes[0].name`, `a volume name must be a DNS label`),
	refused("an app volume name longer than 59 characters is refused", volumes(`{name: `+strings.Repeat("v", 60)+`, mountPath: /etc/db, secret: {name: db}}`), `spec.app.volumes[0].name`, `may not be more than 59`),
	refused("a relative mount path is refused", volumes(`{name: db, mountPath: etc/db, secret: {name: db}}`), `spec.app.volumes[0].mountPath`, `mountPath must be an absolute path (start with /)`),
	refused("a mount path with a dot-dot segment is refused", volumes(`{name: db, mountPath: /srv/../etc/shadow, secret: {name: db}}`), `spec.app.volumes[0].mountPath`, `mountPath may not have '.' or '..' segments`),
	refused("a mount path with a trailing slash or an empty segment is refused", volumes(`{name: a, mountPath: /etc/db/, secret: {name: db}}, {name: b, mountPath: /etc//db, secret: {name: db}}`), `spec.app.volumes[0].mountPath`, `spec.app.volumes[1].mountPath`, `mountPath may not hold an empty segment or end with /`),
	refused("a mount path over the app's writable /tmp is refused", volumes(`{name: a, mountPath: /tmp, secret: {name: db}}, {name: b, mountPath: /tmp/db, secret: {name: db}}`), `spec.app.volumes[0].mountPath`, `spec.app.volumes[1].mountPath`, `mountPath may not be, lie inside or contain a path the pod mounts itself`),
	refused("a mount path above the API token's folder is refused", volumes(`{name: db, mountPath: /var/run/secrets, secret: {name: db}}`), `spec.app.volumes[0].mountPath`, `mountPath may not be, lie inside or contain a path the pod mounts itself`),
	refused("a mount path over the kubelet's /etc/hosts or the kernel's /proc is refused", volumes(`{name: a, mountPath: /etc/hosts, configMap: {name: hosts}}, {name: b, mountPath: /proc/self, configMap: {name: hosts}}`), `spec.app.volumes[0].mountPath`, `spec.app.volumes[1].mountPath`, `a path the pod mounts itself`),
	refused("two app volumes with the same mount path are refused", volumes(`{name: a, mountPath: /etc/db, secret: {name: db}}, {name: b, mountPath: /etc/db, configMap: {name: db}}`), `spec.app.volumes`, `two volumes may not have the same mountPath`),
	refused("two app volumes with the same name are refused", volumes(`{name: db, mountPath: /etc/a, secret: {name: db}}, {name: db, mountPath: /etc/b, secret: {name: db}}`), `spec.app.volumes[1]: Duplicate value: {"name":"db"}`),
	refused("an app volume naming both a Secret and a ConfigMap is refused", volumes(`{name: db, mountPath: /etc/db, secret: {name: db}, configMap: {name: db}}`), `spec.app.volumes[0]`, `a volume needs exactly one of secret, configMap or persistentVolumeClaim`),
	refused("an app volume naming nothing to mount is refused", volumes(`{name: db, mountPath: /etc/db}`), `spec.app.volumes[0]`, `a volume needs exactly one of secret, configMap or persistentVolumeClaim`),
	refused("a writable Secret volume is refused", volumes(`{name: db, mountPath: /etc/db, readOnly: false, secret: {name: db}}`), `spec.app.volumes[0]`, `readOnly may be false only for a persistentVolumeClaim`),
	refused("a Secret name that is not a DNS subdomain is refused", volumes(`{name: db, mountPath: /etc/db, secret: {name: Db_Password}}`), `spec.app.volumes[0].secret.name`),
	refused("seventeen app volumes are refused", volumes(repeated(17, "{name: v%[1]d, mountPath: /etc/v%[1]d, configMap: {name: v%[1]d}}")), `spec.app.volumes: Too many: 17: must have at most 16 items`),
	refused("a pool state other than Started or Stopped is refused", `spec: {state: Paused}`, "spec.state", `supported values: "Started", "Stopped"`),
	refused("a rollout that may neither add nor stop a worker is refused", `spec: {rollout: {maxSurge: 0}}`, "spec.rollout", "maxSurge and maxUnavailable cannot both be 0"),
	refused("a rollout surge above 100 is refused", `spec: {rollout: {maxSurge: 101}}`, "spec.rollout.maxSurge", "should be less than or equal to 100"),
	refused("content with two sources is refused", `spec: {app: null, content: {configMap: {name: site}, image: {reference: "registry.example.com/site:1.4"}}}`, "spec.content", "content needs exactly one of configMap, image or persistentVolumeClaim"),
	refused("content without a source is refused", `spec: {app: null, content: {}}`, "spec.content", "content needs exactly one of configMap, image or persistentVolumeClaim"),
	refused("an image reference with a space is refused", `spec: {app: {image: registry.example.com/shop 2.1}}`, `spec.app.image: Invalid value: "registry.example.com/shop 2.1"`, "should match"),
	refused("an app on port 8080, where nginx listens, is refused", `spec: {app: {port: 8080}}`, "spec.app.port", "app port may not be 8080 or 8081: nginx listens there"),
	refused("a gRPC app on port 8084, where nginx takes HTTP/2, is refused", `spec: {app: {image: "registry.example.com/greeter:1", port: 8084, protocol: GRPC}}`, "spec.app", "app port may not be 8084 with protocol HTTP2 or GRPC"),
	refused("an HTTP/2 app that would start on demand is refused", `spec: {app: {image: "registry.example.com/api:1", port: 9000, protocol: HTTP2}}`, "an app that speaks HTTP2 or GRPC cannot start on demand: set idle.onDemandStart to false"),
	refused("an app protocol other than HTTP, HTTP2 and GRPC is refused", `spec: {app: {image: "registry.example.com/greeter:1", port: 9000, protocol: h2c}}`, "spec.app.protocol", "Unsupported value"),
	refused("an app on a privileged port is refused", `spec: {app: {port: 80}}`, "spec.app.port", "should be greater than or equal to 1024"),
	refused("an environment variable name with a dash is refused", `spec: {app: {env: [{name: SHOP-MODE, value: live}]}}`, `spec.app.env[0].name: Invalid value: "SHOP-MODE"`, "should match"),
	refused("an environment variable set twice is refused", `spec: {app: {env: [{name: MODE, value: live}, {name: MODE, value: test}]}}`, "spec.app.env[1]: Duplicate value", `"name":"MODE"`),
	refused("minus one replicas are refused", `spec: {replicas: -1}`, "spec.replicas", "should be greater than or equal to 0"),
	refused("a worker CPU below 10m is refused", `spec: {cpu: 5m}`, "spec.cpu", "cpu must be between 10m and 64"),
	refused("a worker CPU that is not a quantity gets only the quantity error", `spec: {cpu: lots}`, `spec.cpu: Invalid value: "lots"`, "should match"),
	refused("a recycling memory limit below 1Mi is refused", `spec: {recycling: {memory: "-1Mi"}}`, "spec.recycling.memory", "recycling memory must be between 1Mi and 1Ti"),
	refused("a worker memory below 16Mi is refused", `spec: {memory: 8Mi}`, "spec.memory", "memory must be between 16Mi and 1Ti"),
	refused("a queue length of 5 is refused", `spec: {queue: {length: 5}}`, "spec.queue.length", "should be greater than or equal to 10"),
	refused("a queue length of 70000 is refused", `spec: {queue: {length: 70000}}`, "spec.queue.length", "should be less than or equal to 65535"),
	refused("a queue timeout of 50ms is refused", `spec: {queue: {timeout: 50ms}}`, "spec.queue.timeout", "queue timeout must be between 100ms and 1h"),
	refused("a health check interval of 0s is refused", `spec: {healthCheck: {interval: 0s}}`, "spec.healthCheck.interval", "healthCheck interval must be between 1s and 1h"),
	refused("a ping interval of 0s is refused", `spec: {healthCheck: {pingInterval: 0s}}`, "spec.healthCheck.pingInterval", "healthCheck pingInterval must be between 1s and 1h"),
	refused("a ping interval over an hour is refused", `spec: {healthCheck: {pingInterval: 61m}}`, "spec.healthCheck.pingInterval", "healthCheck pingInterval must be between 1s and 1h"),
	refused("a ping response time under a second is refused", `spec: {healthCheck: {pingResponseTime: 500ms}}`, "spec.healthCheck.pingResponseTime", "healthCheck pingResponseTime must be between 1s and 10m"),
	refused("a ping response time over ten minutes is refused", `spec: {healthCheck: {pingResponseTime: 11m}}`, "spec.healthCheck.pingResponseTime", "healthCheck pingResponseTime must be between 1s and 10m"),
	refused("a startup time limit of 0s is refused", `spec: {healthCheck: {startupTimeLimit: 0s}}`, "spec.healthCheck.startupTimeLimit", "healthCheck startupTimeLimit must be between 1s and 1h"),
	refused("a startup time limit over an hour is refused", `spec: {healthCheck: {startupTimeLimit: 2h}}`, "spec.healthCheck.startupTimeLimit", "healthCheck startupTimeLimit must be between 1s and 1h"),
	refused("a shutdown time limit over an hour is refused", `spec: {healthCheck: {shutdownTimeLimit: 90m}}`, "spec.healthCheck.shutdownTimeLimit", "healthCheck shutdownTimeLimit must be between 1s and 1h"),
	refused("a shutdown time limit as long as the drain pause is refused", `spec: {healthCheck: {shutdownTimeLimit: 10s}}`, "spec.healthCheck.shutdownTimeLimit", "healthCheck shutdownTimeLimit must be longer than the 10s drain pause a leaving worker keeps serving for"),
	refused("pingingEnabled that is not a boolean is refused", `spec: {healthCheck: {pingingEnabled: "yes"}}`, "spec.healthCheck.pingingEnabled", "must be of type boolean"),
	refused("a health check path without a leading slash is refused", `spec: {healthCheck: {path: healthz}}`, `spec.healthCheck.path: Invalid value: "healthz"`, "should match"),
	refused("a rapid-fail interval of 1s is refused", `spec: {rapidFailProtection: {interval: 1s}}`, "spec.rapidFailProtection.interval", "rapidFailProtection interval must be between 10s and 24h"),
	refused("a cpuLimit action Kill is refused", `spec: {cpuLimit: {percent: 80, action: Kill}}`, `spec.cpuLimit.action: Unsupported value: "Kill"`, `"Report", "Throttle", "Shutdown"`),
	refused("a cpuLimit without a percent is refused", `spec: {cpuLimit: {action: Throttle}}`, "spec.cpuLimit.percent: Required value"),
	refused("an idle timeout of 30s is refused", `spec: {idle: {timeout: 30s}}`, "spec.idle.timeout", "idle timeout must be 0s (off) or between 1m and 720h"),
	refused("a recycling interval of 5m is refused", `spec: {recycling: {interval: 5m}}`, "spec.recycling.interval", "recycling interval must be 0s (off) or at least 10m"),
	refused("autoscaling with minReplicas above maxReplicas is refused", `spec: {autoscaling: {minReplicas: 5, maxReplicas: 3}}`, "spec.autoscaling", "minReplicas must be less than or equal to maxReplicas"),
	refused("autoscaling with minReplicas above the default maxReplicas is refused", `spec: {autoscaling: {minReplicas: 20}}`, "spec.autoscaling", "minReplicas must be less than or equal to maxReplicas"),
	refused("fallbackReplicas below minReplicas are refused", `spec: {autoscaling: {minReplicas: 2, maxReplicas: 6, fallbackReplicas: 1}}`, "spec.autoscaling", "fallbackReplicas must be between minReplicas and maxReplicas"),
	refused("fallbackReplicas above maxReplicas are refused", `spec: {autoscaling: {minReplicas: 2, maxReplicas: 6, fallbackReplicas: 7}}`, "spec.autoscaling", "fallbackReplicas must be between minReplicas and maxReplicas"),
	refused("a target CPU utilisation of 0 percent is refused", `spec: {autoscaling: {targetCPUUtilizationPercent: 0}}`, "spec.autoscaling.targetCPUUtilizationPercent", "should be greater than or equal to 1"),
	refused("a target CPU utilisation of 101 percent is refused", `spec: {autoscaling: {targetCPUUtilizationPercent: 101}}`, "spec.autoscaling.targetCPUUtilizationPercent", "should be less than or equal to 100"),
	refused("an AppPool name longer than 50 characters is refused", `metadata: {name: `+tooLongName+`}`, "an AppPool name may be at most 50 characters"),
	refused("an AppPool name with a dot is refused (routes could not name it)", `metadata: {name: web.pool}`, "an AppPool name must be a DNS label"),
	// Accepted.
	accepted("a gRPC app is accepted", `
		metadata: {name: grpc}
		spec:
		  app: {image: "registry.example.com/greeter:1", port: 9000, protocol: GRPC}
		  idle: {onDemandStart: false}
	`),
	accepted("an HTTP app may use port 8084", `{metadata: {name: http-8084}, spec: {app: {port: 8084}}}`),
	accepted("a minimal AppPool serving a ConfigMap is accepted", `spec: {app: null, content: {configMap: {name: site}}}`),
	accepted("a minimal AppPool running only an app is accepted", `{}`),
	accepted("durations that combine hours, minutes, seconds and milliseconds are accepted", `
		metadata: {name: 2nd-pool}
		spec:
		  queue: {timeout: 1m30s500ms}
		  healthCheck: {interval: 59m59s, timeout: 4m59s999ms}
		  rapidFailProtection: {interval: 23h59m}
		  recycling: {interval: 1740m}
		  autoscaling: {stabilizationWindow: 86400s}
	`),
	accepted("a full AppPool with every section is accepted", `
		spec:
		  content:
		    image: {reference: "registry.example.com/site:1.4@sha256:0123456789abcdef", path: /srv/www}
		  app:
		    port: 8082
		    args: ["--listen", ":8082"]
		    env: [{name: SHOP_MODE, value: live}, {name: _DEBUG}]
		  replicas: 0
		  cpu: 250m
		  memory: 1Gi
		  maxConcurrentRequests: 500
		  queue: {length: 65535, timeout: 100ms}
		  healthCheck:
		    path: /healthz
		    interval: 10s
		    timeout: 2s
		    failureThreshold: 5
		    pingingEnabled: false
		    pingInterval: 1s
		    pingResponseTime: 10m
		    startupTimeLimit: 1h
		    shutdownTimeLimit: 11s
		  rapidFailProtection: {enabled: false, maxFailures: 10, interval: 10m}
		  cpuLimit: {percent: 90, interval: 1m, action: Throttle}
		  idle: {timeout: 0s, onDemandStart: false}
		  recycling: {interval: 0s, requests: 100000, memory: 900Mi}
		  autoscaling:
		    minReplicas: 2
		    maxReplicas: 20
		    targetCPUUtilizationPercent: 50
		    forecastRequestsPerSecond: 1500
		    stabilizationWindow: 10m
		    fallbackReplicas: 4
	`),
	accepted("an AppPool serving a PersistentVolumeClaim with a long idle timeout is accepted", `spec: {app: null, content: {persistentVolumeClaim: {claimName: site.files}}, idle: {timeout: 720h}, recycling: {interval: 10m}}`),
	accepted("an app mounting a Secret, an optional ConfigMap and a writable claim at paths beside the pod's own is accepted", `
		spec:
		  app:
		    volumes:
		    - {name: db, mountPath: /etc/shop/db, secret: {name: shop-db.example}}
		    - name: settings
		      mountPath: /etc/shop/settings
		      configMap: {name: shop-settings, optional: true}
		    - name: uploads
		      mountPath: /var/shop/uploads
		      readOnly: false
		      persistentVolumeClaim: {claimName: shop-uploads}
		    - {name: tmpfiles, mountPath: /tmpfiles, configMap: {name: tmpfiles}}
		    - {name: runtime, mountPath: /var/run/shop, configMap: {name: runtime}}
	`),
}
