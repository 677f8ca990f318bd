package streamrequest

import (
	"net/http/httptest"
	"testing"
)

func TestMultiplexedAreStreamsThatDoNotUpgrade(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		upgrade        bool
		stream, mux    bool
	}{
		{"GET", "/clusters/root/api/v1/configmaps", false, false, false},
		{"POST", "/clusters/root/api/v1/namespaces/default/configmaps?watch=true", false, false, false},
		{"GET", "/clusters/root/api/v1/configmaps?watch=true&resourceVersion=1", false, true, true},
		{"GET", "/clusters/root/api/v1/watch/configmaps", false, true, true},
		{"GET", "/api/v1/namespaces/default/pods/p/log?follow=true", false, true, true},
		{"GET", "/clusters/root/api/v1/configmaps?watch=1", true, true, false},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.upgrade {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
		}
		if got := Is(req); got != tc.stream {
			t.Errorf("Is(%s %s) = %v, want %v", tc.method, tc.target, got, tc.stream)
		}
		if got := Multiplexed(req); got != tc.mux {
			t.Errorf("Multiplexed(%s %s, upgrade %v) = %v, want %v", tc.method, tc.target, tc.upgrade, got, tc.mux)
		}
	}
}
