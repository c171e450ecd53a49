package controllers

import (
	"strings"
	"testing"
)

func TestTheFarmOfAGatewayIsAValidWebFarmName(t *testing.T) {
	long := "unresolved-gateway-with-one-attached-unresolved-route"
	for _, tt := range []struct {
		name, gateway, want string
	}{
		{"a Gateway whose name is a WebFarm name lends it to its farm", "edge", "edge"},
		{"a Gateway of 50 characters lends its name whole", strings.Repeat("a", 50), strings.Repeat("a", 50)},
		{"a longer Gateway's farm keeps 41 characters and a hash of the name", long, long[:41] + "-"},
		{"dots become dashes, hashed, since a farm's name is a DNS label", "www.example.com", "www-example-com-"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ownFarmName(tt.gateway)
			if !strings.HasPrefix(got, tt.want) || len(got) > 50 || !farmNamePattern.MatchString(got) {
				t.Fatalf("ownFarmName(%q) = %q, want %q... of at most 50 characters, a DNS label", tt.gateway, got, tt.want)
			}
			if tt.want == tt.gateway && got != tt.gateway {
				t.Fatalf("ownFarmName(%q) = %q, want the Gateway's name", tt.gateway, got)
			}
		})
	}
	if ownFarmName(long) == ownFarmName(long+"-2") {
		t.Fatal("two long Gateway names that share their first 41 characters give one farm")
	}
}
