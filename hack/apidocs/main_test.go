package main

import (
	"bytes"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// schema reads a JSON schema written as YAML, as controller-gen writes it.
func schema(t *testing.T, text string) *apiextv1.JSONSchemaProps {
	t.Helper()
	var s apiextv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(text), &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &s
}

// farmSchema is a small farm: an enum with a default, nested arrays of
// objects, an array of strings, a quantity and CEL rules at several depths.
const farmSchema = `
type: object
x-kubernetes-validations:
- rule: size(self.metadata.name) <= 50
  message: a name may be at most 50 characters
properties:
  spec:
    type: object
    required: [sites]
    x-kubernetes-validations:
    - rule: "has(self.sites) || has(self.other)"
      message: a farm needs sites
    properties:
      unavailableResponse:
        type: string
        default: L7
        enum: [L7, L4]
        description: |-
          UnavailableResponse is how the frontend answers
          for a stopped pool.
      cpu:
        anyOf: [{type: integer}, {type: string}]
        x-kubernetes-int-or-string: true
        default: 500m
        pattern: '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'
      sites:
        type: array
        minItems: 1
        maxItems: 500
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          required: [name]
          properties:
            name:
              type: string
            hosts:
              type: array
              x-kubernetes-list-type: set
              items:
                type: string
                maxLength: 253
                pattern: '^(\*\.)?[a-z0-9]+$'
            routes:
              type: array
              items:
                type: object
                properties:
                  pathPrefix:
                    type: string
                    default: /
                    pattern: '^/(a|b)?$'
                  cachePolicy:
                    type: string
                    x-kubernetes-validations:
                    - rule: size(self) > 0
                      message: cachePolicy may not be empty
`

// specOf is the spec property of a schema.
func specOf(t *testing.T, text string) *apiextv1.JSONSchemaProps {
	t.Helper()
	spec := schema(t, text).Properties["spec"]
	return &spec
}

func rowsByPath(rows []Row) map[string]Row {
	m := map[string]Row{}
	for _, r := range rows {
		m[r.Path] = r
	}
	return m
}

func TestFieldRows(t *testing.T) {
	rows := FieldRows("spec", specOf(t, farmSchema), true)
	byPath := rowsByPath(rows)
	tests := []struct {
		name string
		path string
		want Row
	}{
		{"a field with a default and an enum renders its row with both, and its description on one line",
			"spec.unavailableResponse", Row{Path: "spec.unavailableResponse", Type: "string", Default: "`L7`",
				Validation: "one of `L7`, `L4`", Description: "UnavailableResponse is how the frontend answers for a stopped pool."}},
		{"a required object says so and shows the message of its CEL rule",
			"spec", Row{Path: "spec", Type: "object", Validation: "**required**; *CEL:* a farm needs sites"}},
		{"an array of objects shows its bounds and the key of its list map",
			"spec.sites", Row{Path: "spec.sites", Type: "[]object", Validation: "**required**; minItems 1; maxItems 500; unique by `name` (list type map)"}},
		{"the fields of an array's items have [] in their path",
			"spec.sites[].name", Row{Path: "spec.sites[].name", Type: "string", Validation: "**required**"}},
		{"the fields of a nested array's items have [] at each level",
			"spec.sites[].routes[].pathPrefix", Row{Path: "spec.sites[].routes[].pathPrefix", Type: "string", Default: "`/`",
				Validation: "pattern `^/(a\\|b)?$`"}},
		{"an array of strings is a list of strings",
			"spec.sites[].hosts", Row{Path: "spec.sites[].hosts", Type: "[]string", Validation: "no duplicates (list type set)"}},
		{"the items of an array of strings get a row with their own checks",
			"spec.sites[].hosts[]", Row{Path: "spec.sites[].hosts[]", Type: "string", Validation: "maxLength 253; pattern `^(\\*\\.)?[a-z0-9]+$`"}},
		{"a quantity is named a quantity and its long pattern is left out",
			"spec.cpu", Row{Path: "spec.cpu", Type: "quantity", Default: "`500m`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := byPath[tt.path]
			if !ok {
				t.Fatalf("no row for %s; rows: %v", tt.path, rows)
			}
			if got != tt.want {
				t.Errorf("row of %s\n got %+v\nwant %+v", tt.path, got, tt.want)
			}
		})
	}
}

func TestFieldRowsOrder(t *testing.T) {
	var paths []string
	for _, r := range FieldRows("spec", specOf(t, farmSchema), true) {
		paths = append(paths, r.Path)
	}
	want := []string{
		"spec", "spec.cpu",
		"spec.sites", "spec.sites[].hosts", "spec.sites[].hosts[]", "spec.sites[].name",
		"spec.sites[].routes", "spec.sites[].routes[].cachePolicy", "spec.sites[].routes[].pathPrefix",
		"spec.unavailableResponse",
	}
	t.Run("fields come depth first, each object's properties in alphabetical order", func(t *testing.T) {
		if strings.Join(paths, " ") != strings.Join(want, " ") {
			t.Errorf("paths\n got %v\nwant %v", paths, want)
		}
	})
}

func TestRules(t *testing.T) {
	rules := Rules("", schema(t, farmSchema))
	tests := []struct {
		name    string
		index   int
		path    string
		message string
		line    string
	}{
		{"a rule on the object itself is listed first, as on the object", 0, "", "a name may be at most 50 characters",
			"| (the object) | a name may be at most 50 characters | `size(self.metadata.name) <= 50` |\n"},
		{"a rule on spec comes next, its pipes escaped for the table", 1, "spec", "a farm needs sites",
			"| `spec` | a farm needs sites | `has(self.sites) \\|\\| has(self.other)` |\n"},
		{"a rule inside nested arrays has [] in its path", 2, "spec.sites[].routes[].cachePolicy", "cachePolicy may not be empty",
			"| `spec.sites[].routes[].cachePolicy` | cachePolicy may not be empty | `size(self) > 0` |\n"},
	}
	if len(rules) != len(tests) {
		t.Fatalf("got %d rules, want %d: %v", len(rules), len(tests), rules)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rules[tt.index]
			if r.Path != tt.path || r.Message != tt.message {
				t.Errorf("rule %d is %q on %q, want %q on %q", tt.index, r.Message, r.Path, tt.message, tt.path)
			}
			if got := r.Markdown(); got != tt.line {
				t.Errorf("line\n got %q\nwant %q", got, tt.line)
			}
		})
	}
}

func TestMarkdownEscaping(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"a pipe in a description does not end the cell", Row{Path: "a", Description: "L7 | L4"}.Markdown(),
			"| `a` |  |  |  | L7 \\| L4 |\n"},
		{"an asterisk in a description is not emphasis", cell(`"*.example.com" and "*"`), `"\*.example.com" and "\*"`},
		{"angle brackets in a description are not HTML", cell("max-age=<maxAge>"), "max-age=&lt;maxAge&gt;"},
		{"a backtick in code gets a longer fence", code("a`b"), "``a`b``"},
		{"an empty value is an empty cell, not an empty code span", code(""), ""},
		{"a default that is an object is compact JSON", DefaultText(schema(t, "type: object\ndefault: {a: 1}")), "`{\"a\":1}`"},
		{"an exclusive minimum uses a strict sign", ValidationText(schema(t, "type: number\nminimum: 0.5\nexclusiveMinimum: true"), false), "> 0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

const crdTemplate = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: KINDs.webfarm.dev
spec:
  group: webfarm.dev
  names:
    kind: KIND
    listKind: KINDList
    plural: KINDs
    singular: KIND
    shortNames: [SHORT]
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    additionalPrinterColumns:
    - jsonPath: .status.ready
      name: Ready
      type: string
    - jsonPath: .status.reason
      name: Reason
      type: string
      priority: 1
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              replicas: {type: integer, default: 2}
`

func crd(t *testing.T, kind, short string) apiextv1.CustomResourceDefinition {
	t.Helper()
	text := strings.NewReplacer("KIND", kind, "SHORT", short).Replace(crdTemplate)
	c, err := ParseCRD([]byte(text))
	if err != nil {
		t.Fatalf("ParseCRD: %v", err)
	}
	return c
}

func TestRender(t *testing.T) {
	crds := []apiextv1.CustomResourceDefinition{crd(t, "Zeta", "z"), crd(t, "CachePolicy", "cp"), crd(t, "WebFarm", "wf"), crd(t, "AppPool", "ap")}
	out := string(Render(crds))
	headings := func(s string) []string {
		var h []string
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "## ") {
				h = append(h, line)
			}
		}
		return h
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"the header line comes first", strings.HasPrefix(out, HeaderLine+"\n")},
		{"the kinds come farm, pool, cache policy, then the others by name",
			strings.Join(headings(out), "|") == "## WebFarm|## AppPool|## CachePolicy|## Zeta"},
		{"short names are listed", strings.Contains(out, "| Short names | `wf` |")},
		{"a printer column of priority 1 shows only with -o wide", strings.Contains(out, "| Reason | string | `.status.reason` | with `-o wide` |")},
		{"a column without a description leaves the description column out", !strings.Contains(out, "| Column | Type | JSONPath | Shown | Description |")},
		{"the standard fields get no table", !strings.Contains(out, "`apiVersion` |") && !strings.Contains(out, "`metadata` |")},
		{"spec gets a table with its fields", strings.Contains(out, "| `spec.replicas` | integer | `2` |  |  |")},
		{"the output does not depend on the order the CRDs were read in",
			bytes.Equal(Render(crds), Render([]apiextv1.CustomResourceDefinition{crds[3], crds[2], crds[1], crds[0]}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("not so; output:\n%s", out)
			}
		})
	}
}

func TestParseCRD(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		wantErr bool
	}{
		{"a CRD is read", strings.NewReplacer("KIND", "WebFarm", "SHORT", "wf").Replace(crdTemplate), false},
		{"another kind of object is refused", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", true},
		{"a field the CRD type does not know is refused", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspecs: {}\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCRD([]byte(tt.text))
			if (err != nil) != tt.wantErr {
				t.Errorf("error %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}
