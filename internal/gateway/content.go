package gateway

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

// A rule serves its AppPools' static content from a folder of it: the one
// its SiteContent (an ExtensionRef filter) names. The pools are the
// provider's and hold every tenant's files, so a route of another
// namespace than the Gateway's is confined to the folder named after its
// namespace (<root>/<namespace>/<directory>), with or without a
// SiteContent: a tenant can neither name nor reach another's files. Routes
// of the Gateway's namespace are the provider's own and resolve from the
// content root, as the farm's inline sites do.

// extensionRefs are the names of the objects of a kind that a rule's
// ExtensionRef filters name, in order.
func extensionRefs(rule gwv1.HTTPRouteRule, kind string) []string {
	var out []string
	for _, f := range rule.Filters {
		if f.Type == gwv1.HTTPRouteFilterExtensionRef && f.ExtensionRef != nil &&
			string(f.ExtensionRef.Group) == GroupWebFarm && string(f.ExtensionRef.Kind) == kind {
			out = append(out, string(f.ExtensionRef.Name))
		}
	}
	return out
}

// siteContentName is the SiteContent a rule names (empty: none).
func siteContentName(rule gwv1.HTTPRouteRule) string {
	if names := extensionRefs(rule, KindSiteContent); len(names) > 0 {
		return names[0]
	}
	return ""
}

// ruleContent is what a rule serves of its AppPools' content (nil: the
// content root with the pool's defaults), or why its SiteContent does not
// resolve: missing, or holding what the API refuses.
func ruleContent(in Inputs, routeNamespace string, rule gwv1.HTTPRouteRule) (*model.SiteContent, backendProblem) {
	folder := tenantFolder(routeNamespace, in.Gateway.Namespace)
	name := siteContentName(rule)
	if name == "" {
		if folder == "" {
			return nil, backendProblem{}
		}
		return &model.SiteContent{Directory: folder}, backendProblem{}
	}
	spec, ok := in.SiteContents[types.NamespacedName{Namespace: routeNamespace, Name: name}]
	if !ok {
		return nil, backendProblem{gwv1.RouteReasonBackendNotFound, fmt.Sprintf("SiteContent %s not found in namespace %s", name, routeNamespace)}
	}
	c, err := model.SiteContentOf(v1.RouteContent(spec))
	if err != nil {
		return nil, backendProblem{gwv1.RouteReasonUnsupportedValue, fmt.Sprintf("SiteContent %s: %v", name, err)}
	}
	return inFolder(c, folder), backendProblem{}
}

// tenantFolder is the folder of the pools' content a namespace's routes
// are confined to (empty: the Gateway's namespace, the content root).
func tenantFolder(routeNamespace, gatewayNamespace string) string {
	if routeNamespace == gatewayNamespace {
		return ""
	}
	return routeNamespace
}

// inFolder is a content with its directory resolved under folder.
func inFolder(c *model.SiteContent, folder string) *model.SiteContent {
	switch {
	case folder == "":
		return c
	case c == nil:
		return &model.SiteContent{Directory: folder}
	case c.Directory == "":
		c.Directory = folder
	default:
		c.Directory = folder + "/" + c.Directory
	}
	return c
}

// badContentRule says why a rule's SiteContent cannot serve it (empty: it
// can, or it names none): the content is a pool's, so its backends are
// AppPools alone.
func badContentRule(in Inputs, routeNamespace string, rule gwv1.HTTPRouteRule) string {
	name := siteContentName(rule)
	if name == "" {
		return ""
	}
	for _, ref := range rule.BackendRefs {
		if ref.Group == nil || string(*ref.Group) != GroupWebFarm || ref.Kind == nil || string(*ref.Kind) != KindAppPool {
			return fmt.Sprintf("SiteContent %s serves AppPools' content: the rule's backends must be AppPools", name)
		}
	}
	return ""
}
