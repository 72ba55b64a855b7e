package awstest

// AWS Systems Manager Parameter Store, as the SDK's ssm client speaks it:
// the AWS JSON 1.1 protocol (POST /, Content-Type
// application/x-amz-json-1.1, the operation in X-Amz-Target as
// AmazonSSM.<Operation>, errors as {"__type", "message"}), SigV4-signed
// for the service ssm. Only GetParameter is served.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

const ssmTargetPrefix = "AmazonSSM."

// SetParameter creates or overwrites an SSM String parameter, as
// `aws ssm put-parameter --overwrite` does.
func (s *Server) SetParameter(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parameters == nil {
		s.parameters = map[string]string{}
	}
	s.parameters[name] = value
}

// serveSSM serves a request of the AWS JSON 1.1 protocol.
func (s *Server) serveSSM(w http.ResponseWriter, r *http.Request, body []byte) {
	op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), ssmTargetPrefix)
	req, scope, sigErr := s.received(r, body, op, url.Values{})
	defer s.record(req)
	respond := func(status int, code, msg string) {
		req.Error = code
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amzn-Requestid", requestID())
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
	}
	var in struct{ Name string }
	switch err := json.Unmarshal(body, &in); {
	case err != nil:
		respond(http.StatusBadRequest, "SerializationException", "the body is not JSON: "+err.Error())
		return
	case op != "GetParameter":
		respond(http.StatusBadRequest, "UnknownOperationException", "unknown operation "+r.Header.Get("X-Amz-Target"))
		return
	case sigErr != nil:
		respond(http.StatusForbidden, "SignatureDoesNotMatch", sigErr.Error())
		return
	case scope.service != "ssm" || scope.region != s.region:
		respond(http.StatusBadRequest, "InvalidSignatureException", fmt.Sprintf("signed for %s in %s", scope.service, scope.region))
		return
	}
	req.Params.Set("Name", in.Name)
	if e, failed := s.takeFault(op); failed {
		respond(e.HTTPStatus, e.Code, e.Message)
		return
	}
	s.mu.Lock()
	v, ok := s.parameters[in.Name]
	s.mu.Unlock()
	if !ok {
		respond(http.StatusBadRequest, "ParameterNotFound", "")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", requestID())
	_ = json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{
		"Name": in.Name, "Type": "String", "Value": v, "Version": 1, "DataType": "aws:ec2:image",
		"ARN": fmt.Sprintf("arn:aws:ssm:%s:%s:parameter/%s", s.region, DefaultAccountID, strings.TrimPrefix(in.Name, "/")),
	}})
}
