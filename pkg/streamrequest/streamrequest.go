// Package streamrequest tells the requests that hold their connection open
// for long, which proxies and in-process clients send over multiplexed
// HTTP/2 while the short ones go over HTTP/1.1.
package streamrequest

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/httpstream"
)

// Is tells whether req is likely to keep its response open: a watch or a
// followed log. It is a cheap guess from the URL: one taken wrongly only
// goes over the other transport.
func Is(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	q := req.URL.RawQuery
	return strings.Contains(req.URL.Path, "/watch/") || strings.Contains(q, "watch=") || strings.Contains(q, "follow=")
}

// Multiplexed tells whether req should go over HTTP/2: a stream that does
// not ask to upgrade its connection, which only HTTP/1.1 can.
func Multiplexed(req *http.Request) bool {
	return Is(req) && !httpstream.IsUpgradeRequest(req)
}
