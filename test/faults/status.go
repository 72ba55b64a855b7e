package faults

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusResponse is the API server's answer for a fault: a Status object
// with the code, reason and message it would send.
func statusResponse(req *http.Request, kind Kind) *http.Response {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure}
	header := http.Header{"Content-Type": []string{"application/json"}}
	switch kind {
	case InternalError:
		st.Code, st.Reason, st.Message = http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"Internal error occurred: injected storage failure"
	case Unavailable:
		st.Code, st.Reason, st.Message = http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
			"injected fault: etcdserver: no leader"
	case TooManyRequests:
		st.Code, st.Reason, st.Message = http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests,
			"Too many requests, please try again later."
		header.Set("Retry-After", "1")
	case Conflict:
		st.Code, st.Reason = http.StatusConflict, metav1.StatusReasonConflict
		st.Message = "Operation cannot be fulfilled on " + resourceOf(req) + ": the object has been modified; please apply your changes to the latest version and try again"
	case ExpiredWatch:
		st.Code, st.Reason, st.Message = http.StatusGone, metav1.StatusReasonExpired, "too old resource version (injected fault)"
	}
	body, _ := json.Marshal(st)
	return &http.Response{
		Status: http.StatusText(int(st.Code)), StatusCode: int(st.Code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// resourceOf names the object of a request's path, as "nodes \"n1\"".
func resourceOf(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if n := len(parts); n >= 3 && (parts[n-1] == "status" || parts[n-1] == "scale") {
		parts = parts[:n-1]
	}
	if n := len(parts); n >= 2 {
		return parts[n-2] + ` "` + parts[n-1] + `"`
	}
	return req.URL.Path
}
