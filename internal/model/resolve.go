package model

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// ResolveFarm turns a WebFarm into the model, applying defaults for empty fields.
func ResolveFarm(f *v1.WebFarm, p Platform) (Farm, error) {
	var errs errList
	errs.objectName("WebFarm", f.Namespace, f.Name)
	fe := f.Spec.Frontend
	out := Farm{
		Name:            f.Name,
		Namespace:       f.Namespace,
		UID:             string(f.UID),
		RejectWithReset: f.Spec.UnavailableResponse == v1.UnavailableL4,
		Platform:        p,
		Frontend: Frontend{
			Replicas:             orDefault(fe.Replicas, v1.DefaultFrontendReplicas),
			ServiceType:          orDefault(string(fe.Service.Type), "ClusterIP"),
			Port:                 orDefault(fe.Service.Port, v1.DefaultFrontendPort),
			NodePort:             fe.Service.NodePort,
			HTTPSPort:            orDefault(fe.Service.HTTPSPort, v1.DefaultFrontendHTTPSPort),
			TLSMinVersion:        orDefault(string(fe.TLS.MinVersion), v1.DefaultTLSMinVersion),
			ConnectionTimeout:    errs.duration("frontend.connectionTimeout", fe.ConnectionTimeout, v1.DefaultConnectionTimeout),
			RequestTimeout:       errs.duration("frontend.requestTimeout", fe.RequestTimeout, v1.DefaultRequestTimeout),
			WebSocketIdleTimeout: errs.duration("frontend.webSocketIdleTimeout", fe.WebSocketIdleTimeout, v1.DefaultWebSocketIdle),
			KeepAlive:            deref(fe.KeepAlive, true),
			Compression:          deref(fe.Compression, false),
			DebugHeaders:         deref(fe.DebugHeaders, false),
			CPUMilli:             quantityOr(fe.CPU, v1.DefaultFrontendCPU).MilliValue(),
			MemoryBytes:          errs.bytes("frontend.memory", quantityOr(fe.Memory, v1.DefaultFrontendMemory)),
			AccessLog: AccessLog{
				Enabled:       deref(fe.AccessLog.Enabled, true),
				SamplePercent: orDefault(fe.AccessLog.SamplePercent, v1.DefaultAccessLogPercent),
			},
		},
		Affinity: Affinity{Type: orDefault(string(f.Spec.SessionAffinity.Type), string(v1.AffinityNone))},
	}
	out.Frontend.ClientAddress = resolveClientAddress(fe.ClientAddress, &errs)
	out.Frontend.Service = resolveServiceExposure(fe.Service, out.Frontend.ServiceType, &errs)
	out.Frontend.Placement = resolvePlacement("frontend.placement", fe.Placement, &errs)
	out.Frontend.ClientLimits = resolveClientLimits(fe.ClientLimits, &errs)
	out.Frontend.Autoscaling = resolveFrontendAutoscaling(fe.Autoscaling, &errs)
	if p := out.Frontend.AccessLog.SamplePercent; p < 1 || p > 100 {
		errs.add(fmt.Sprintf("frontend.accessLog.samplePercent %d: between 1 and 100", p))
	}
	if out.Affinity.Type == string(v1.AffinityCookie) {
		c := f.Spec.SessionAffinity.Cookie
		if c == nil {
			c = &v1.AffinityCookieSpec{}
		}
		out.Affinity.CookieName = orDefault(c.Name, v1.DefaultAffinityCookieName)
		if !cookieName.MatchString(out.Affinity.CookieName) {
			errs.add(fmt.Sprintf("sessionAffinity.cookie.name %q: letters, digits, '.', '_' or '-', at most 64", out.Affinity.CookieName))
		}
		out.Affinity.CookieTTL = errs.duration("sessionAffinity.cookie.ttl", c.TTL, "0s")
		out.Affinity.CookieSameSite = orDefault(string(c.SameSite), v1.DefaultCookieSameSite)
		if !slices.Contains([]string{"Lax", "Strict", "None"}, out.Affinity.CookieSameSite) {
			errs.add(fmt.Sprintf("sessionAffinity.cookie.sameSite %q: Lax, Strict or None", out.Affinity.CookieSameSite))
		}
	}

	pools, policies := map[string]bool{}, map[string]bool{}
	siteOfHost := map[string]string{}
	for _, s := range f.Spec.Sites {
		for _, h := range s.Hosts {
			if other, taken := siteOfHost[string(h)]; taken && other != s.Name {
				errs.add(fmt.Sprintf("host name %q belongs to sites %q and %q", h, other, s.Name))
			}
			siteOfHost[string(h)] = s.Name
		}
		// The schema's pattern: the name becomes part of Envoy's virtual
		// host and stat names, which must be valid UTF-8.
		if msgs := validation.IsDNS1123Label(s.Name); len(msgs) > 0 {
			errs.add(fmt.Sprintf("site %q: not a valid name: %s", s.Name, strings.Join(msgs, ", ")))
		}
		site := Site{Name: s.Name}
		for _, h := range s.Hosts {
			site.Hosts = append(site.Hosts, string(h))
		}
		slices.Sort(site.Hosts)
		site.MaxBandwidthBytesPerSecond = s.MaxBandwidthBytesPerSecond
		site.TLS = resolveSiteTLS(s, &errs)
		site.MaxConnections = resolveMaxConnections(s, site.TLS, &errs)
		for _, r := range s.Routes {
			route := Route{
				// The schema admits a trailing "/" ("/api/"); prefixes match
				// whole segments, so "/api" is the same route, and Envoy's
				// segment match refuses a prefix ending in "/".
				PathPrefix:  trimTrailingSlash(orDefault(string(r.PathPrefix), v1.DefaultPathPrefix)),
				Pool:        string(r.AppPool),
				CachePolicy: string(r.CachePolicy),
			}
			route.Content = resolveSiteContent(fmt.Sprintf("site %q route %q: content", s.Name, route.PathPrefix), r.Content, &errs)
			if slices.ContainsFunc(site.Routes, func(o Route) bool { return o.PathPrefix == route.PathPrefix }) {
				errs.add(fmt.Sprintf("site %q: path prefixes %q and %q are the same route (a trailing \"/\" changes nothing)", s.Name, route.PathPrefix, r.PathPrefix))
			}
			errs.referencedName(fmt.Sprintf("site %q route %q: appPool", s.Name, route.PathPrefix), route.Pool)
			errs.referencedName(fmt.Sprintf("site %q route %q: cachePolicy", s.Name, route.PathPrefix), route.CachePolicy)
			site.Routes = append(site.Routes, route)
			pools[route.Pool] = true
			if route.CachePolicy != "" {
				policies[route.CachePolicy] = true
			}
		}
		slices.SortFunc(site.Routes, func(a, b Route) int {
			return cmp.Or(cmp.Compare(len(b.PathPrefix), len(a.PathPrefix)), cmp.Compare(a.PathPrefix, b.PathPrefix))
		})
		out.Sites = append(out.Sites, site)
	}
	slices.SortFunc(out.Sites, func(a, b Site) int { return cmp.Compare(a.Name, b.Name) })
	out.Frontend.DefaultTLSSite = defaultTLSSite(out, fe.TLS.DefaultSite, &errs)
	if !slices.Contains([]string{"1.2", "1.3"}, out.Frontend.TLSMinVersion) {
		errs.add(fmt.Sprintf("frontend.tls.minVersion %q: 1.2 or 1.3", out.Frontend.TLSMinVersion))
	}
	if out.Affinity.CookieSameSite == "None" && slices.ContainsFunc(out.Sites, func(s Site) bool { return s.TLS == nil || s.TLS.ServePlainHTTP }) {
		errs.add("sessionAffinity.cookie.sameSite None needs every site to have tls with plainHTTP Redirect")
	}
	out.Pools = sortedKeys(pools)
	out.CachePolicies = sortedKeys(policies)
	return out, errs.err()
}

// resolveSiteTLS is a site's HTTPS, nil without tls.
func resolveSiteTLS(s v1.Site, errs *errList) *SiteTLS {
	t := s.TLS
	if t.SecretName == "" {
		if t != (v1.SiteTLS{}) {
			errs.add(fmt.Sprintf("site %q: tls needs a secretName", s.Name))
		}
		return nil
	}
	if !secretName.MatchString(string(t.SecretName)) || len(t.SecretName) > 253 {
		errs.add(fmt.Sprintf("site %q: tls.secretName %q is not a Secret name", s.Name, t.SecretName))
	}
	if t.PlainHTTP != "" && t.PlainHTTP != v1.PlainHTTPRedirect && t.PlainHTTP != v1.PlainHTTPServe {
		errs.add(fmt.Sprintf("site %q: tls.plainHTTP %q: Redirect or Serve", s.Name, t.PlainHTTP))
	}
	if t.HSTS.MaxAgeSeconds < 0 || t.HSTS.MaxAgeSeconds > 63072000 {
		errs.add(fmt.Sprintf("site %q: tls.hsts.maxAgeSeconds %d: between 1 and 63072000", s.Name, t.HSTS.MaxAgeSeconds))
	}
	return &SiteTLS{
		SecretName:        string(t.SecretName),
		ServePlainHTTP:    t.PlainHTTP == v1.PlainHTTPServe,
		HSTSMaxAge:        time.Duration(t.HSTS.MaxAgeSeconds) * time.Second,
		IncludeSubDomains: deref(t.HSTS.IncludeSubDomains, false),
	}
}

// resolveMaxConnections is the site's HTTPS connection bound, which only a
// site whose plain HTTP just redirects can have (the schema says so too).
func resolveMaxConnections(s v1.Site, t *SiteTLS, errs *errList) uint32 {
	switch n := s.MaxConnections; {
	case n == 0:
		return 0
	case n < 0 || n > 1000000:
		errs.add(fmt.Sprintf("site %q: maxConnections %d: between 1 and 1000000", s.Name, n))
	case t == nil || t.ServePlainHTTP:
		errs.add(fmt.Sprintf("site %q: maxConnections counts HTTPS connections: it needs tls with plainHTTP Redirect", s.Name))
	default:
		return uint32(n)
	}
	return 0
}

var secretName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// defaultTLSSite is the site a client without SNI gets: the one named, or
// the first with TLS by name.
func defaultTLSSite(f Farm, named string, errs *errList) string {
	tls := f.TLSSites()
	if named != "" {
		if !slices.ContainsFunc(tls, func(s Site) bool { return s.Name == named }) {
			errs.add(fmt.Sprintf("frontend.tls.defaultSite %q is not a site with tls", named))
		}
		return named
	}
	if len(tls) == 0 {
		return ""
	}
	return tls[0].Name
}

// HostCount is the number of host names over all sites.
func (f Farm) HostCount() int {
	n := 0
	for _, s := range f.Sites {
		n += len(s.Hosts)
	}
	return n
}

// resolveClientAddress checks the trusted proxies again (the API server
// checks them too) so that nothing unparsed reaches Envoy.
func resolveClientAddress(c v1.ClientAddress, errs *errList) ClientAddress {
	out := ClientAddress{ProxyProtocol: deref(c.ProxyProtocol, false)}
	if c.TrustedHops < 0 || c.TrustedHops > 10 {
		errs.add(fmt.Sprintf("frontend.clientAddress.trustedHops %d: between 1 and 10", c.TrustedHops))
	} else {
		out.TrustedHops = uint32(c.TrustedHops)
	}
	for _, n := range c.TrustedNetworks {
		prefix, err := netip.ParsePrefix(string(n))
		if err != nil {
			errs.add(fmt.Sprintf("frontend.clientAddress.trustedNetworks: %q is not a CIDR", n))
			continue
		}
		if prefix.Addr().Is4In6() {
			// As the API server's isCIDR: IPv4 connections reach Envoy as
			// IPv4, so such a network would never match one.
			errs.add(fmt.Sprintf("frontend.clientAddress.trustedNetworks: %q is IPv4-mapped IPv6: write the IPv4 network", n))
			continue
		}
		out.TrustedNetworks = append(out.TrustedNetworks, prefix.Masked())
	}
	slices.SortFunc(out.TrustedNetworks, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	out.TrustedNetworks = slices.Compact(out.TrustedNetworks)
	if out.TrustedHops > 0 && len(out.TrustedNetworks) > 0 {
		errs.add("frontend.clientAddress: set trustedHops or trustedNetworks, not both")
	}
	return out
}

// keyRef is the Secret or ConfigMap key an environment variable takes its
// value from (nil: a plain value). The API lets one of the two be set.
func keyRef(src *v1.EnvVarSource) *KeyRef {
	if src == nil {
		return nil
	}
	return &KeyRef{
		Secret:   src.SecretKeyRef.Name != "",
		Name:     string(cmp.Or(src.SecretKeyRef.Name, src.ConfigMapKeyRef.Name)),
		Key:      cmp.Or(src.SecretKeyRef.Key, src.ConfigMapKeyRef.Key),
		Optional: deref(cmp.Or(src.SecretKeyRef.Optional, src.ConfigMapKeyRef.Optional), false),
	}
}

// resolveVolumes checks an app's volumes again (the API server checks them
// too): each names one object and mounts it at a path of its own, away from
// the pod's own mounts.
func resolveVolumes(in []v1.AppVolume, errs *errList) []Volume {
	var out []Volume
	paths := map[string]bool{}
	for _, v := range in {
		vol := Volume{Name: v.Name, MountPath: v.MountPath, ReadOnly: deref(v.ReadOnly, true)}
		switch {
		case v.Secret.Name != "":
			vol.Kind, vol.Object, vol.Optional = VolumeSecret, string(v.Secret.Name), deref(v.Secret.Optional, false)
		case v.ConfigMap.Name != "":
			vol.Kind, vol.Object, vol.Optional = VolumeConfigMap, string(v.ConfigMap.Name), deref(v.ConfigMap.Optional, false)
		case v.PersistentVolumeClaim.ClaimName != "":
			vol.Kind, vol.Object = VolumeClaim, v.PersistentVolumeClaim.ClaimName
		}
		if n := len(slices.DeleteFunc([]string{string(v.Secret.Name), string(v.ConfigMap.Name), v.PersistentVolumeClaim.ClaimName},
			func(s string) bool { return s == "" })); n != 1 {
			errs.add(fmt.Sprintf("app.volumes %s: needs exactly one of secret, configMap or persistentVolumeClaim", v.Name))
		}
		if !vol.ReadOnly && vol.Kind != VolumeClaim {
			errs.add(fmt.Sprintf("app.volumes %s: readOnly may be false only for a persistentVolumeClaim", v.Name))
		}
		if problem := mountPathProblem(v.MountPath); problem != "" {
			errs.add(fmt.Sprintf("app.volumes %s: mountPath %q %s", v.Name, v.MountPath, problem))
		}
		if paths[v.MountPath] {
			errs.add(fmt.Sprintf("app.volumes %s: two volumes may not have the same mountPath %q", v.Name, v.MountPath))
		}
		paths[v.MountPath] = true
		out = append(out, vol)
	}
	slices.SortFunc(out, func(x, y Volume) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

// mountPathProblem says what is wrong with a volume's mount path ("" when
// nothing is): the API's rules on AppVolume.mountPath.
func mountPathProblem(p string) string {
	switch {
	case !strings.HasPrefix(p, "/") || p == "/":
		return "is not an absolute path below /"
	case strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/-") != "":
		return "may hold only letters, digits, '.', '_', '-' and '/'"
	case slices.ContainsFunc(strings.Split(p[1:], "/"), func(s string) bool { return s == "" || s == "." || s == ".." }):
		return "may not have empty, '.' or '..' segments"
	}
	for _, r := range ReservedMountPaths {
		if p == r || strings.HasPrefix(p, r+"/") || strings.HasPrefix(r, p+"/") {
			return "is, lies inside or contains " + r + ", which the pod mounts itself"
		}
	}
	return ""
}

// ResolvePool turns an AppPool's spec into the model, applying defaults for
// empty fields. It reads nothing of the pool's status: where the pool stands
// (stopped, idle, the workers decided for it) is the caller's to add with
// WithRuntime.
func ResolvePool(ap *v1.AppPool, p Platform) (Pool, error) {
	var errs errList
	s := ap.Spec
	out := Pool{
		Name:                  ap.Name,
		Namespace:             ap.Namespace,
		UID:                   string(ap.UID),
		CPUMilli:              quantityOr(s.CPU, v1.DefaultPoolCPU).MilliValue(),
		MemoryBytes:           errs.bytes("memory", quantityOr(s.Memory, v1.DefaultPoolMemory)),
		MaxConcurrentRequests: orDefault(s.MaxConcurrentRequests, v1.DefaultMaxConcurrent),
		QueueLength:           orDefault(s.Queue.Length, v1.DefaultQueueLength),
		QueueTimeout:          errs.duration("queue.timeout", s.Queue.Timeout, "0s"),
		Health: HealthCheck{
			Path:              orDefault(string(s.HealthCheck.Path), v1.DefaultHealthPath),
			Interval:          errs.duration("healthCheck.interval", s.HealthCheck.Interval, v1.DefaultHealthInterval),
			Timeout:           errs.duration("healthCheck.timeout", s.HealthCheck.Timeout, v1.DefaultHealthTimeout),
			FailureThreshold:  orDefault(s.HealthCheck.FailureThreshold, v1.DefaultHealthFailures),
			Pinging:           deref(s.HealthCheck.PingingEnabled, true),
			PingInterval:      errs.duration("healthCheck.pingInterval", s.HealthCheck.PingInterval, v1.DefaultPingInterval),
			PingResponseTime:  errs.duration("healthCheck.pingResponseTime", s.HealthCheck.PingResponseTime, v1.DefaultPingResponseTime),
			StartupTimeLimit:  errs.duration("healthCheck.startupTimeLimit", s.HealthCheck.StartupTimeLimit, v1.DefaultStartupTimeLimit),
			ShutdownTimeLimit: errs.duration("healthCheck.shutdownTimeLimit", s.HealthCheck.ShutdownTimeLimit, v1.DefaultShutdownTimeLimit),
		},
		RapidFail: RapidFail{
			Enabled:     deref(s.RapidFailProtection.Enabled, true),
			MaxFailures: orDefault(s.RapidFailProtection.MaxFailures, v1.DefaultRapidFailMax),
			Interval:    errs.duration("rapidFailProtection.interval", s.RapidFailProtection.Interval, v1.DefaultRapidFailInterval),
		},
		IdleTimeout:          errs.duration("idle.timeout", s.Idle.Timeout, v1.DefaultIdleTimeout),
		OnDemandStart:        deref(s.Idle.OnDemandStart, true),
		Recycling:            resolveRecycling(s.Recycling, &errs),
		AdministratorStopped: s.State == v1.PoolStateStopped,
		MountAPIToken:        deref(s.Identity.MountAPIToken, false),
		Rollout: Rollout{
			MaxSurge:       deref(s.Rollout.MaxSurge, v1.DefaultRolloutMaxSurge),
			MaxUnavailable: deref(s.Rollout.MaxUnavailable, 0),
		},
		Placement: resolvePlacement("placement", s.Placement, &errs),
		Platform:  p,
	}
	if out.Health.ShutdownTimeLimit <= WorkerDrainPause {
		errs.add(fmt.Sprintf("healthCheck.shutdownTimeLimit %s: must be longer than the %s drain pause a leaving worker keeps serving for", out.Health.ShutdownTimeLimit, WorkerDrainPause))
	}
	if out.Rollout.MaxSurge+out.Rollout.MaxUnavailable < 1 {
		errs.add("rollout: maxSurge and maxUnavailable cannot both be 0: the update could not start")
	}
	if s.Autoscaling == nil {
		r := deref(s.Replicas, v1.DefaultPoolReplicas)
		out.Replicas = &r
	} else {
		a := s.Autoscaling
		out.Autoscaling = &Autoscaling{
			MinReplicas:         orDefault(a.MinReplicas, v1.DefaultMinReplicas),
			MaxReplicas:         orDefault(a.MaxReplicas, v1.DefaultMaxReplicas),
			TargetUtilization:   float64(orDefault(a.TargetCPUUtilizationPercent, v1.DefaultTargetCPUPercent)) / 100,
			StabilizationWindow: errs.duration("autoscaling.stabilizationWindow", a.StabilizationWindow, v1.DefaultStabilization),
			FallbackReplicas:    a.FallbackReplicas,
		}
		if a.ForecastRequestsPerSecond != nil {
			out.Autoscaling.ForecastRequestsPerSecond = float64(*a.ForecastRequestsPerSecond)
		}
		// Until the autoscaler has decided, the pool starts at its minimum;
		// the AppPool controller applies the autoscaler's count in its place.
		r := out.Autoscaling.MinReplicas
		out.Replicas = &r
	}
	// An optional struct is set when its required field is.
	if l := s.CPULimit; l.Percent != 0 {
		out.CPULimit = &CPULimit{
			Percent:  l.Percent,
			Interval: errs.duration("cpuLimit.interval", l.Interval, "5m"),
			Action:   orDefault(string(l.Action), CPUReport),
		}
		if out.CPULimit.Action == CPUThrottle {
			// Throttle caps each worker at the limit's share of its CPU: the
			// kernel enforces it continuously, as IIS's throttling does.
			out.CPUMilli = max(10, out.CPUMilli*int64(l.Percent)/100)
		}
	}
	if c := s.Content; c != nil {
		switch {
		case c.ConfigMap.Name != "":
			out.Content = Content{Source: ContentConfigMap, Name: string(c.ConfigMap.Name)}
		case c.Image.Reference != "":
			out.Content = Content{Source: ContentImage, Name: c.Image.Reference, ImagePath: orDefault(c.Image.Path, v1.DefaultImageContentPath)}
		case c.PersistentVolumeClaim.ClaimName != "":
			out.Content = Content{Source: ContentClaim, Name: c.PersistentVolumeClaim.ClaimName}
		}
		out.Content.DefaultDocuments = resolveDefaultDocuments(c.DefaultDocuments, &errs)
	}
	if a := s.App; a.Image != "" {
		app := &App{Image: a.Image, Port: a.Port, Protocol: AppProtocol(orDefault(string(a.Protocol), string(v1.AppProtocolHTTP))), Args: slices.Clone(a.Args)}
		switch app.Protocol {
		case AppHTTP, AppHTTP2, AppGRPC:
		default:
			errs.add(fmt.Sprintf("app protocol %q is not HTTP, HTTP2 or GRPC", app.Protocol))
		}
		for _, e := range a.Env {
			if f := e.ValueFrom; f != nil && (f.SecretKeyRef.Name == "") == (f.ConfigMapKeyRef.Name == "") {
				errs.add(fmt.Sprintf("app.env %s: valueFrom needs exactly one of secretKeyRef and configMapKeyRef", e.Name))
			}
			app.Env = append(app.Env, EnvVar{Name: e.Name, Value: e.Value, From: keyRef(e.ValueFrom)})
		}
		slices.SortFunc(app.Env, func(x, y EnvVar) int { return cmp.Compare(x.Name, y.Name) })
		app.Volumes = resolveVolumes(a.Volumes, &errs)
		out.App = app
	}
	if out.HTTP2() && out.OnDemandStart {
		// The activator hands requests over in HTTP/1.1.
		errs.add("an app that speaks HTTP2 or GRPC cannot start on demand: set idle.onDemandStart to false")
	}
	if out.Content.Source == ContentNone && out.App == nil {
		errs.add("an AppPool needs content, an app, or both")
	}
	errs.objectName("AppPool", out.Namespace, out.Name)
	return out, errs.err()
}

// ResolveCache turns a CachePolicy and the pools it fronts into the model.
func ResolveCache(cp *v1.CachePolicy, upstreams []Upstream, p Platform) (Cache, error) {
	var errs errList
	s := cp.Spec
	out := Cache{
		Name:                 cp.Name,
		Namespace:            cp.Namespace,
		UID:                  string(cp.UID),
		FrequentHitThreshold: orDefault(s.FrequentHitThreshold, v1.DefaultHitThreshold),
		FrequentHitPeriod:    errs.duration("frequentHitPeriod", s.FrequentHitPeriod, v1.DefaultHitPeriod),
		ObjectTTL:            errs.duration("objectTTL", s.ObjectTTL, v1.DefaultObjectTTL),
		MaxObjectSizeBytes:   errs.bytes("maxObjectSize", quantityOr(s.MaxObjectSize, v1.DefaultMaxObjectSize)),
		MemorySizeBytes:      errs.bytes("memorySize", quantityOr(s.MemorySize, v1.DefaultCacheMemory)),
		CacheQueryStrings:    deref(s.CacheQueryStrings, false),
		ClientCacheMode:      orDefault(string(s.ClientCache.Mode), string(v1.ClientCacheNoControl)),
		ClientMaxAge:         errs.duration("clientCache.maxAge", s.ClientCache.MaxAge, "0s"),
		Replicas:             orDefault(s.Replicas, v1.DefaultCacheReplicas),
		CPUMilli:             quantityOr(s.CPU, v1.DefaultCacheCPU).MilliValue(),
		Placement:            resolvePlacement("placement", s.Placement, &errs),
		Platform:             p,
	}
	errs.objectName("CachePolicy", out.Namespace, out.Name)
	for _, u := range upstreams {
		if msgs := validation.IsDNS1123Label(u.Pool); len(msgs) > 0 {
			errs.add(fmt.Sprintf("pool %q: not a valid name: %s", u.Pool, strings.Join(msgs, ", ")))
			continue
		}
		if net.ParseIP(u.Address) == nil {
			errs.add(fmt.Sprintf("pool %q: Service address %q is not an IP address", u.Pool, u.Address))
			continue
		}
		out.Upstreams = append(out.Upstreams, u)
	}
	slices.SortFunc(out.Upstreams, func(a, b Upstream) int { return cmp.Compare(a.Pool, b.Pool) })
	return out, errs.err()
}

// errList gathers the problems of one resolution so a person sees all of them.
type errList []string

func (e *errList) add(msg string) { *e = append(*e, msg) }

func (e *errList) err() error {
	if len(*e) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(*e, "; "))
}

// objectName refuses a namespace or name the API server would refuse: they
// reach config files (nginx.conf's header comment, map keys, upstream names),
// where a newline or a ";" would start a directive. Empty names (objects
// built in code) are left alone.
func (e *errList) objectName(kind, namespace, name string) {
	for _, n := range []string{namespace, name} {
		if n == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			e.add(fmt.Sprintf("%s %q/%q: %q is not a valid name: %s", kind, namespace, name, n, strings.Join(msgs, ", ")))
		}
	}
}

// referencedName refuses a reference to an object the API server could not
// hold: the name becomes part of cluster and cookie names.
func (e *errList) referencedName(field, name string) {
	if name == "" {
		return
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		e.add(fmt.Sprintf("%s %q is not a valid name: %s", field, name, strings.Join(msgs, ", ")))
	}
}

// resolveClientLimits applies the defaults; the schema bounds each value,
// and objects built in code are bounded here too.
func resolveClientLimits(c v1.ClientLimits, errs *errList) ClientLimits {
	out := ClientLimits{
		RequestHeadersTimeout: errs.duration("frontend.clientLimits.requestHeadersTimeout", c.RequestHeadersTimeout, v1.DefaultHeadersTimeout),
		RequestBodyTimeout:    errs.duration("frontend.clientLimits.requestBodyTimeout", c.RequestBodyTimeout, v1.DefaultBodyTimeout),
		MaxRequestHeadersKiB:  uint32(orDefault(c.MaxRequestHeadersKiB, v1.DefaultMaxHeadersKiB)),
		PerAddress:            resolveRequestRate("frontend.clientLimits.perAddress", c.PerAddress, errs),
		PerClassC:             resolveRequestRate("frontend.clientLimits.perClassC", c.PerClassC, errs),
	}
	if out.RequestHeadersTimeout < time.Second || out.RequestBodyTimeout < time.Second {
		errs.add("frontend.clientLimits: request timeouts must be at least 1s")
	}
	if c.MaxRequestHeadersKiB < 0 || c.MaxRequestHeadersKiB > 96 {
		errs.add(fmt.Sprintf("frontend.clientLimits.maxRequestHeadersKiB %d: between 1 and 96", c.MaxRequestHeadersKiB))
	}
	return out
}

// resolveRequestRate is nil for a rate left unset.
func resolveRequestRate(field string, r v1.RequestRate, errs *errList) *RequestRate {
	if r == (v1.RequestRate{}) {
		return nil
	}
	burst := orDefault(r.Burst, r.RequestsPerSecond)
	if r.RequestsPerSecond < 1 || burst < r.RequestsPerSecond {
		errs.add(fmt.Sprintf("%s: requestsPerSecond %d must be at least 1 and burst %d at least requestsPerSecond", field, r.RequestsPerSecond, burst))
		return nil
	}
	return &RequestRate{PerSecond: uint32(r.RequestsPerSecond), Burst: uint32(burst)}
}

func (e *errList) duration(field string, v v1.Duration, def string) time.Duration {
	s := orDefault(string(v), def)
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		e.add(fmt.Sprintf("%s: %q is not a duration", field, s))
		return 0
	}
	return d
}

// maxBytes bounds every memory quantity (1 TiB, as the schemas do): past
// int64 a quantity's Value() wraps around.
const maxBytes = 1 << 40

func (e *errList) bytes(field string, q *resource.Quantity) int64 {
	if q.Sign() <= 0 || q.CmpInt64(maxBytes) > 0 {
		e.add(fmt.Sprintf("%s: %s is not between 1 byte and 1Ti", field, q.String()))
		return 0
	}
	return q.Value()
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func quantityOr(q *resource.Quantity, def string) *resource.Quantity {
	if q == nil || q.IsZero() {
		d := resource.MustParse(def)
		return &d
	}
	return q
}

// cookieName is the schema's pattern of an affinity cookie's name.
var cookieName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func trimTrailingSlash(prefix string) string {
	if len(prefix) > 1 {
		return strings.TrimSuffix(prefix, "/")
	}
	return prefix
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// resolveFrontendAutoscaling is a farm's frontend.autoscaling with its
// defaults (nil: the frontends run frontend.replicas). The model checks
// what the schema checks: an object the schema did not see (stored before
// a rule, or built in a test) gets the same answer.
func resolveFrontendAutoscaling(a *v1.FrontendAutoscaling, errs *errList) *Autoscaling {
	if a == nil {
		return nil
	}
	out := &Autoscaling{
		MinReplicas:         orDefault(a.MinReplicas, v1.DefaultMinReplicas),
		MaxReplicas:         orDefault(a.MaxReplicas, v1.DefaultFrontendMaxScale),
		TargetUtilization:   float64(orDefault(a.TargetCPUUtilizationPercent, v1.DefaultTargetCPUPercent)) / 100,
		StabilizationWindow: errs.duration("frontend.autoscaling.stabilizationWindow", a.StabilizationWindow, v1.DefaultStabilization),
	}
	if out.MinReplicas < 1 || out.MaxReplicas > MaxFrontendReplicas || out.MinReplicas > out.MaxReplicas {
		errs.add(fmt.Sprintf("frontend.autoscaling: minReplicas %d and maxReplicas %d must satisfy 1 <= minReplicas <= maxReplicas <= %d",
			out.MinReplicas, out.MaxReplicas, MaxFrontendReplicas))
	}
	if t := out.TargetUtilization; t <= 0 || t > 1 {
		errs.add(fmt.Sprintf("frontend.autoscaling.targetCPUUtilizationPercent %.0f: between 1 and 100", t*100))
	}
	return out
}
