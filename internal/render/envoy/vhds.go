package envoy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
)

// A farm's Envoys receive its plain-HTTP virtual hosts one by one (VHDS,
// over delta ADS): one site's change then sends that site alone, where a
// RouteConfiguration sent whole would carry every site of the farm (64 MiB
// with 20,000 sites). The HTTPS route configuration stays whole: its sites
// carry certificates of their own and are few.

// VirtualHostName is the xDS resource name of one of the farm route
// configuration's virtual hosts. Envoy's VHDS asks for the route
// configuration's name and takes every resource under "<name>/" (xDS
// namespace matching); it keys virtual hosts by their name, so the name
// inside the resource is the resource's name.
func VirtualHostName(routeConfig, virtualHost string) string {
	return routeConfig + "/" + virtualHost
}

// VirtualHostResource is one of the farm route configuration's virtual hosts
// as a VHDS resource.
type VirtualHostResource struct {
	// Name is the resource's name (VirtualHostName), also the name inside it.
	Name string
	// Version changes exactly when the virtual host does.
	Version string
	// Encoded is the virtual host in its wire form, whose marshalling gives
	// those bytes back: about a seventh of the memory of the decoded
	// message (20,000 decoded virtual hosts take some 160 MiB).
	Encoded proto.Message
}

// VirtualHost decodes the resource, under its site's name (as the farm
// route configuration of FarmRouting holds it).
func (v VirtualHostResource) VirtualHost() (*routev3.VirtualHost, error) {
	b, err := proto.Marshal(v.Encoded)
	if err != nil {
		return nil, err
	}
	var vh routev3.VirtualHost
	if err := proto.Unmarshal(b, &vh); err != nil {
		return nil, err
	}
	vh.Name = strings.TrimPrefix(vh.Name, RouteConfigName+"/")
	return &vh, nil
}

// encodeVirtualHost is a virtual host's VHDS resource.
func encodeVirtualHost(vh *routev3.VirtualHost) (VirtualHostResource, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vh)
	if err != nil {
		return VirtualHostResource{}, err
	}
	// The resource's name replaces the site's: of a field written twice
	// the last one counts, so the routes need no copy.
	name := VirtualHostName(RouteConfigName, vh.GetName())
	b = protowire.AppendTag(b, 1, protowire.BytesType) // VirtualHost.name
	b = protowire.AppendString(b, name)
	encoded := &emptypb.Empty{}
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(b, encoded); err != nil {
		return VirtualHostResource{}, err
	}
	sum := sha256.Sum256(b)
	return VirtualHostResource{Name: name, Version: hex.EncodeToString(sum[:8]), Encoded: encoded}, nil
}

// SiteVirtualHosts are the farm route configuration's virtual hosts, decoded
// when the Routing holds them encoded alone (FarmRoutingReusing).
func (r Routing) SiteVirtualHosts() ([]*routev3.VirtualHost, error) {
	for _, rc := range r.Routes {
		if rc.GetName() == RouteConfigName && len(rc.GetVirtualHosts()) > 0 {
			return rc.GetVirtualHosts(), nil
		}
	}
	out := make([]*routev3.VirtualHost, 0, len(r.FarmVirtualHosts))
	for _, v := range r.FarmVirtualHosts {
		vh, err := v.VirtualHost()
		if err != nil {
			return nil, err
		}
		out = append(out, vh)
	}
	return out, nil
}

// DeltaResources are the route configurations of a farm's routing for delta
// xDS: the farm route configuration loses its virtual hosts (they are
// Routing.FarmVirtualHosts) and names the VHDS source instead; the others
// are returned as they are. Pure: the routes given are not changed.
func DeltaResources(routes []*routev3.RouteConfiguration) []*routev3.RouteConfiguration {
	out := make([]*routev3.RouteConfiguration, 0, len(routes))
	for _, rc := range routes {
		if rc.GetName() == RouteConfigName {
			withoutHosts := shallowCopy(rc)
			withoutHosts.VirtualHosts = nil
			withoutHosts.Vhds = &routev3.Vhds{ConfigSource: adsSource()}
			rc = withoutHosts
		}
		out = append(out, rc)
	}
	return out
}

// shallowCopy is a new message whose fields share m's values.
func shallowCopy[T proto.Message](m T) T {
	src := m.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	return dst.Interface().(T)
}

// VirtualHosts remember a farm's rendered virtual hosts, encoded, each by
// its site, while the rest of what a virtual host is rendered from (the farm
// without its sites, its pools and their endpoints) holds. Its methods are
// not safe for concurrent use: one per farm, used by one reconcile at a time.
type VirtualHosts struct {
	context string
	bySite  map[string]VirtualHostResource
	// used are the sites rendered or reused since the last forFarm: the
	// others are forgotten then.
	used map[string]bool
}

// forFarm prepares the memory for a render of the farm: it is emptied when
// anything but the sites changed, and loses the sites that went away.
// Without memory (nil, or inputs it cannot key) every virtual host renders.
func (v *VirtualHosts) forFarm(f model.Farm, pools map[string]model.Pool, b endpoints.Backends) *VirtualHosts {
	if v == nil {
		return nil
	}
	f.Sites = nil
	context, err := json.Marshal(struct {
		Farm     model.Farm
		Pools    map[string]model.Pool
		Backends endpoints.Backends
	}{f, pools, b})
	if err != nil {
		return nil
	}
	if string(context) != v.context || v.bySite == nil {
		v.context, v.bySite = string(context), map[string]VirtualHostResource{}
	}
	for site := range v.bySite {
		if !v.used[site] {
			delete(v.bySite, site)
		}
	}
	v.used = map[string]bool{}
	return v
}

// render is the site's virtual host resource (s nil: a virtual host of the
// farm's own), remembered or rendered, validated and encoded; and the
// virtual host itself when it was rendered without memory.
func (v *VirtualHosts) render(s *model.Site, render func() *routev3.VirtualHost) (*routev3.VirtualHost, VirtualHostResource, error) {
	var key string
	if v != nil {
		k, err := json.Marshal(s)
		if err != nil {
			return nil, VirtualHostResource{}, err
		}
		key = string(k)
		if h, ok := v.bySite[key]; ok {
			v.used[key] = true
			return nil, h, nil
		}
	}
	vh := render()
	if err := vh.ValidateAll(); err != nil {
		return nil, VirtualHostResource{}, err
	}
	res, err := encodeVirtualHost(vh)
	if err != nil {
		return nil, VirtualHostResource{}, err
	}
	if v != nil {
		v.bySite[key], v.used[key] = res, true
		return nil, res, nil
	}
	return vh, res, nil
}
