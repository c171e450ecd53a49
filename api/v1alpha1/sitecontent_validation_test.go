package v1alpha1_test

import (
	"strings"
	"testing"
)

func TestSiteContentManifests(t *testing.T) { checkManifests(t, "SiteContent", siteContentCases) }

// siteContentCases are SiteContent manifests: a tenant's, so every way out
// of its folder of the pool's content is refused with its reason.
var siteContentCases = []manifestCase{
	accepted("a directory of nested names is accepted", `spec: {directory: shop/v2.1/public_html}`),
	accepted("a name with dots inside is accepted", `spec: {directory: a..b}`),
	accepted("no directory (the namespace's folder) with documents and pages is accepted",
		`spec: {directory: null, defaultDocuments: [default.htm, index.html], errorPages: [{statusCode: 404, path: /errors/404.html}]}`),
	refused("a directory that climbs out with .. is refused", `spec: {directory: ../tenant-b/shop}`, "spec.directory", "may not name '.' or '..'"),
	refused("a directory with .. inside is refused", `spec: {directory: shop/../../tenant-b}`, "spec.directory", "may not name '.' or '..'"),
	refused("a directory of one dot is refused", `spec: {directory: "."}`, "spec.directory", "may not name '.' or '..'"),
	refused("an absolute directory is refused", `spec: {directory: /etc}`, "spec.directory", "no leading '/'"),
	refused("a directory with percent-encoded dots is refused", `spec: {directory: "%2e%2e/tenant-b"}`, "spec.directory", "no percent-encoding"),
	refused("a directory with a percent-encoded slash is refused", `spec: {directory: "shop%2f..%2ftenant-b"}`, "spec.directory", "no percent-encoding"),
	refused("a directory with a backslash is refused", `spec: {directory: 'shop\..\tenant-b'}`, "spec.directory", "no backslash"),
	refused("a directory with an empty segment is refused", `spec: {directory: "shop//x"}`, "spec.directory", "should match"),
	refused("a directory with a trailing slash is refused", `spec: {directory: shop/}`, "spec.directory", "should match"),
	refused("a directory with a space is refused", `spec: {directory: "my shop"}`, "spec.directory", "should match"),
	refused("an empty directory is refused", `spec: {directory: ""}`, "spec.directory"),
	refused("a directory over 253 characters is refused", `spec: {directory: `+tooLongDirectory+`}`, "spec.directory", "Too long"),
	refused("a default document with a slash is refused", `spec: {defaultDocuments: [../index.html]}`, "spec.defaultDocuments[0]", "should match"),
	refused("a default document listed twice is refused", `spec: {defaultDocuments: [index.html, index.html]}`, "spec.defaultDocuments", "Duplicate value"),
	refused("nine default documents are refused", `spec: {defaultDocuments: [a, b, c, d, e, f, g, h, i]}`, "spec.defaultDocuments", "must have at most 8 items"),
	refused("an error page for 200 is refused", `spec: {errorPages: [{statusCode: 200, path: /ok.html}]}`, "spec.errorPages[0].statusCode", "Unsupported value"),
	refused("an error page that climbs out is refused", `spec: {errorPages: [{statusCode: 404, path: /../../tenant-b/404.html}]}`, "spec.errorPages[0].path", "should match"),
	refused("an error page with an encoded dot is refused", `spec: {errorPages: [{statusCode: 404, path: /%2e%2e/404.html}]}`, "spec.errorPages[0].path", "should match"),
	refused("an error page elsewhere on the web is refused", `spec: {errorPages: [{statusCode: 404, path: "http://evil.example/"}]}`, "spec.errorPages[0].path", "should match"),
	refused("two pages for one status are refused", `spec: {errorPages: [{statusCode: 404, path: /a.html}, {statusCode: 404, path: /b.html}]}`, "spec.errorPages[1]", "Duplicate value"),
}

// tooLongDirectory is a directory of 254 characters.
var tooLongDirectory = strings.Repeat("a", 254)
