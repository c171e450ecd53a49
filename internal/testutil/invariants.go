package testutil

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
)

// The renderers' invariants (only directives and filters their golden files
// have, no statement a user string added) are checked by the renderers' fuzz
// tests and by test/hostile alike: one parser each, so both judge a config
// the same way. This file imports no renderer, so the renderers' own tests
// (envoy's are in package envoy) can use it.

// NginxStatement is one nginx statement: its directive with the blocks
// around it ("http>server>location>proxy_pass") and its number of arguments.
type NginxStatement struct {
	Path string
	Args int
}

// nginxMapKeywords are the words that mean something as the first word of a
// statement in a map block; any other first word there is a key.
var nginxMapKeywords = map[string]bool{"default": true, "include": true, "hostnames": true, "volatile": true}

// NginxStatements splits an nginx config into its statements as nginx's own
// parser does (words separated by blanks, quoted words, comments to the end
// of the line, statements ended by ";" or opening a block with "{"), so a
// test sees the statements nginx would, whatever a user string holds.
func NginxStatements(conf string) ([]NginxStatement, error) {
	var (
		out    []NginxStatement
		blocks []string
		words  []string
		word   strings.Builder
		inWord bool
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	end := func(block bool) error {
		endWord()
		if len(words) == 0 {
			return fmt.Errorf("a statement without a directive (after %v)", blocks)
		}
		name := words[0]
		if n := len(blocks); n > 0 && (blocks[n-1] == "types" || blocks[n-1] == "map" && !nginxMapKeywords[name]) {
			name = "*" // a key of the block, not a directive
		}
		path := strings.Join(append(slices.Clone(blocks), name), ">")
		out = append(out, NginxStatement{path, len(words) - 1})
		if block {
			blocks = append(blocks, name)
		}
		words = words[:0]
		return nil
	}
	for i := 0; i < len(conf); i++ {
		c := conf[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			endWord()
		case c == '#' && !inWord:
			for i < len(conf) && conf[i] != '\n' {
				i++
			}
		case (c == '"' || c == '\'') && !inWord:
			j := i + 1
			for ; j < len(conf) && conf[j] != c; j++ {
				if conf[j] == '\\' {
					j++
				}
			}
			if j >= len(conf) {
				return nil, fmt.Errorf("an unterminated quoted string")
			}
			word.WriteString(conf[i : j+1])
			inWord = true
			i = j
		case c == ';':
			if err := end(false); err != nil {
				return nil, err
			}
		case c == '{':
			if err := end(true); err != nil {
				return nil, err
			}
		case c == '}':
			endWord()
			if len(words) > 0 || len(blocks) == 0 {
				return nil, fmt.Errorf("an unexpected }")
			}
			blocks = blocks[:len(blocks)-1]
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(words) > 0 || len(blocks) > 0 {
		return nil, fmt.Errorf("an unterminated statement or block")
	}
	return out, nil
}

// NginxEmittedDirectives are the statement paths of the golden nginx configs
// matching pattern (under testdata, as GoldenVocabulary reads it): everything
// the nginx renderer writes by itself, so anything else came from a user.
func NginxEmittedDirectives(t testing.TB, pattern string) map[string]bool {
	t.Helper()
	return GoldenVocabulary(t, pattern, func(file []byte) ([]string, error) {
		ss, err := NginxStatements(string(file))
		paths := make([]string, len(ss))
		for i, s := range ss {
			paths[i] = s.Path
		}
		return paths, err
	})
}

// EnvoyExtensions are the filter names (of objects with a typed_config, as
// "filter NAME") and the "@type" values (as "@type TYPE") anywhere in a JSON
// document: the Envoy features a config turns on, whatever its layout.
func EnvoyExtensions(doc []byte) (map[string]bool, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	EachJSONObject(v, func(o map[string]any) {
		if t, ok := o["@type"].(string); ok {
			out["@type "+t] = true
		}
		if _, ok := o["typed_config"]; ok {
			out[fmt.Sprintf("filter %v", o["name"])] = true
		}
	})
	return out, nil
}

// EachJSONObject calls visit with every object in v, a decoded JSON
// document, outer objects first.
func EachJSONObject(v any, visit func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(v)
		for _, e := range v {
			EachJSONObject(e, visit)
		}
	case []any:
		for _, e := range v {
			EachJSONObject(e, visit)
		}
	}
}

// EnvoyEmittedExtensions are the EnvoyExtensions of the golden Envoy configs
// matching pattern (under testdata, as GoldenVocabulary reads it): every
// feature of the Envoy renderer has one, so anything else came from a user.
func EnvoyEmittedExtensions(t testing.TB, pattern string) map[string]bool {
	t.Helper()
	return GoldenVocabulary(t, pattern, func(file []byte) ([]string, error) {
		found, err := EnvoyExtensions(file)
		return slices.Collect(maps.Keys(found)), err
	})
}

// EnvoyOnlyEmitted fails unless every EnvoyExtensions of each document is
// one of the golden Envoy configs matching pattern (EnvoyEmittedExtensions).
func EnvoyOnlyEmitted(t testing.TB, pattern string, docs ...[]byte) {
	t.Helper()
	allowed := EnvoyEmittedExtensions(t, pattern)
	for _, doc := range docs {
		got, err := EnvoyExtensions(doc)
		if err != nil {
			t.Fatalf("the Envoy config is not JSON: %v", err)
		}
		for e := range got {
			if !allowed[e] {
				t.Fatalf("the output has %s, which the renderer never emits by itself\n%s", e, doc[:min(len(doc), 4000)])
			}
		}
	}
}

// PlainPool is p with its names replaced by plain placeholders. Rendered, it
// is the reference a config of p must match statement for statement: a user
// string may change words, never add or change a statement.
func PlainPool(p model.Pool) model.Pool {
	p.Name, p.Namespace = "name", "namespace"
	docs := make([]string, len(p.Content.DefaultDocuments))
	for i := range docs {
		docs[i] = fmt.Sprintf("document%d", i)
	}
	p.Content.DefaultDocuments = docs
	return p
}

// PlainCache is c with its names and its pools' names replaced by plain
// placeholders (the reference, as for PlainPool). c's upstreams are copied,
// not changed.
func PlainCache(c model.Cache) model.Cache {
	c.Name, c.Namespace = "name", "namespace"
	c.Upstreams = slices.Clone(c.Upstreams)
	for i := range c.Upstreams {
		c.Upstreams[i].Pool = fmt.Sprintf("pool%d", i)
	}
	return c
}

// The API server's rules that the fuzz targets apply before rendering: an
// object name (a DNS label of at most maxLen), and a duration of the CRD
// schema's form within [lo, hi] (unset passes).
var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	durationForm = regexp.MustCompile(`^([0-9]{1,6}h)?([0-9]{1,7}m)?([0-9]{1,9}s)?([0-9]{1,9}ms)?$`)
)

// SchemaName reports whether the API server admits s as an object name.
func SchemaName(s string, maxLen int) bool { return len(s) <= maxLen && dnsLabel.MatchString(s) }

// SchemaDuration reports whether the schema admits d within [lo, hi].
func SchemaDuration(d string, lo, hi time.Duration) bool {
	if d == "" {
		return true
	}
	if len(d) > 32 || !durationForm.MatchString(d) {
		return false
	}
	v, err := time.ParseDuration(d)
	return err == nil && v >= lo && v <= hi
}
