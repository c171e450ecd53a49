package model

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// ContentSegment is one name in a path of a pool's content: letters, digits
// and "-._~", not all dots (no "." or ".."), so that a path of them never
// leaves the folder it starts in. The API's patterns, the model and the
// workers' nginx (which checks what the frontend sends again) share it.
const ContentSegment = `[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*`

// Bounds of a site's content, as the API states them.
const (
	MaxDirectoryLength    = 253
	MaxDocumentNameLength = 64
	MaxDefaultDocuments   = 8
	MaxErrorPathLength    = 253
)

// ErrorPageCodes are the statuses a pool's worker answers itself and a site
// may give a page of its own: forbidden (a folder without a default
// document), not found, a method a file does not take, and the app's
// failures (unreachable, timed out, nginx's own errors).
var ErrorPageCodes = []int32{403, 404, 405, 500, 502, 503, 504}

// DefaultDocuments are a pool's default documents unless it names its own,
// as before a pool could.
var DefaultDocuments = []string{"index.html", "index.htm"}

var (
	contentDirectory = regexp.MustCompile(`^` + ContentSegment + `(/` + ContentSegment + `)*$`)
	documentName     = regexp.MustCompile(`^` + ContentSegment + `$`)
	errorPagePath    = regexp.MustCompile(`^(/` + ContentSegment + `)+$`)
)

// resolveSiteContent is a route's content, nil when it sets none (the
// pool's root and defaults).
func resolveSiteContent(field string, c v1.RouteContent, errs *errList) *SiteContent {
	if c.Directory == "" && len(c.DefaultDocuments) == 0 && len(c.ErrorPages) == 0 {
		return nil
	}
	out := &SiteContent{Directory: string(c.Directory)}
	if d := out.Directory; d != "" && (len(d) > MaxDirectoryLength || !contentDirectory.MatchString(d)) {
		errs.add(fmt.Sprintf("%s.directory %q: a relative path of names of letters, digits and \"-._~\" (no \".\" or \"..\"), at most %d characters", field, d, MaxDirectoryLength))
	}
	for _, d := range c.DefaultDocuments {
		out.DefaultDocuments = append(out.DefaultDocuments, string(d))
	}
	checkDocuments(field+".defaultDocuments", out.DefaultDocuments, errs)
	for _, p := range c.ErrorPages {
		page := ErrorPage{StatusCode: p.StatusCode, Path: string(p.Path)}
		if !slices.Contains(ErrorPageCodes, page.StatusCode) {
			errs.add(fmt.Sprintf("%s.errorPages: status %d: one of %v", field, page.StatusCode, ErrorPageCodes))
		}
		if len(page.Path) > MaxErrorPathLength || !errorPagePath.MatchString(page.Path) {
			errs.add(fmt.Sprintf("%s.errorPages %d: path %q: an absolute path within the site's directory, of names of letters, digits and \"-._~\" (no \".\" or \"..\")", field, page.StatusCode, page.Path))
		}
		if slices.ContainsFunc(out.ErrorPages, func(o ErrorPage) bool { return o.StatusCode == page.StatusCode }) {
			errs.add(fmt.Sprintf("%s.errorPages: status %d has two pages", field, page.StatusCode))
		}
		out.ErrorPages = append(out.ErrorPages, page)
	}
	slices.SortFunc(out.ErrorPages, func(a, b ErrorPage) int { return cmp.Compare(a.StatusCode, b.StatusCode) })
	return out
}

// resolveDefaultDocuments are a pool's default documents.
func resolveDefaultDocuments(in []v1.DocumentName, errs *errList) []string {
	if len(in) == 0 {
		return slices.Clone(DefaultDocuments)
	}
	out := make([]string, 0, len(in))
	for _, d := range in {
		out = append(out, string(d))
	}
	checkDocuments("content.defaultDocuments", out, errs)
	return out
}

// checkDocuments refuses a list of default documents the API would refuse:
// too many, a name with a slash or of dots alone, or a name twice.
func checkDocuments(field string, docs []string, errs *errList) {
	if len(docs) > MaxDefaultDocuments {
		errs.add(fmt.Sprintf("%s: %d documents, at most %d", field, len(docs), MaxDefaultDocuments))
	}
	for i, d := range docs {
		if len(d) > MaxDocumentNameLength || !documentName.MatchString(d) {
			errs.add(fmt.Sprintf("%s %q: a file name of letters, digits and \"-._~\" (no slash, not \".\" or \"..\"), at most %d characters", field, d, MaxDocumentNameLength))
		}
		if slices.Contains(docs[:i], d) {
			errs.add(fmt.Sprintf("%s: %q is listed twice", field, d))
		}
	}
}

// SiteContentOf is a content as the API states it (a Gateway API route's
// SiteContent, or an inline route's), nil when it sets none; the error says
// what of it the API would refuse (an object stored before a stricter
// schema, or built in code).
func SiteContentOf(c v1.RouteContent) (*SiteContent, error) {
	var errs errList
	out := resolveSiteContent("content", c, &errs)
	return out, errs.err()
}
