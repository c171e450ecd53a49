// Command promql-metrics prints the metric names each PromQL expression
// selects, found by Prometheus' own parser: the tests check that every
// metric an alerting rule or a dashboard panel queries exists.
//
// It reads a JSON array of expressions on stdin and writes a JSON array of
// the same length: for each, its sorted metric names, or the parser's error.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Metrics []string `json:"metrics"`
	Error   string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promql-metrics: stdin is not a JSON array of strings:", err)
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	results := make([]result, len(exprs))
	for i, e := range exprs {
		results[i] = metrics(p, e)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "promql-metrics:", err)
		os.Exit(1)
	}
}

// metrics are the names of the expression's vector selectors: the name
// written before the braces, or an equality matcher on __name__. A selector
// without either (a regular expression on __name__) is an error: its
// metrics cannot be listed.
func metrics(p parser.Parser, expr string) result {
	ast, err := p.ParseExpr(expr)
	if err != nil {
		return result{Metrics: []string{}, Error: err.Error()}
	}
	names := []string{}
	var unnamed error
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			unnamed = fmt.Errorf("selector %s names no metric", vs)
			return nil
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	slices.Sort(names)
	if unnamed != nil {
		return result{Metrics: names, Error: unnamed.Error()}
	}
	return result{Metrics: names}
}
