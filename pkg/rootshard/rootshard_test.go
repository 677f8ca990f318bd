package rootshard

import "testing"

func TestBaseURLDropsTheClusterOfAKubeconfigServer(t *testing.T) {
	for in, want := range map[string]string{
		"https://127.0.0.1:6443":                        "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/":                       "https://127.0.0.1:6443",
		"https://127.0.0.1:6443/clusters/root":          "https://127.0.0.1:6443",
		"https://root.example:6443/clusters/root:org:x": "https://root.example:6443",
		"https://proxy.example/prefix/clusters/root":    "https://proxy.example/prefix",
	} {
		if got := BaseURL(in); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}
