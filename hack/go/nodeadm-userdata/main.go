// Command nodeadm-check runs the real nodeadm's user-data path on a user data document
// and prints the NodeConfig nodeadm made of it, as JSON, or exits non-zero with
// nodeadm's own error.
//
// The user data is read raw (the bytes EC2 hands the instance: MIME multipart, not
// base64) from the file named by the only argument, or from stdin. It is served by an
// in-process stand-in of the instance metadata service (IMDSv2: PUT /latest/api/token,
// GET /latest/user-data) that AWS_EC2_METADATA_SERVICE_ENDPOINT points nodeadm's IMDS
// client at, and read by nodeadm's own provider exactly as `nodeadm init` reads it:
// configprovider.BuildConfigProvider("imds://user-data").Provide() (MIME multipart ->
// every application/node.eks.aws part decoded -> merged), then api.ValidateNodeConfig
// (init's validation). Both packages are internal to nodeadm; this module's path lies
// under nodeadm's (github.com/awslabs/amazon-eks-ami/nodeadm/cmd/...), and in module
// mode Go allows an internal import by import path, so no copy of nodeadm is needed.
//
// Exit codes: 0 parsed and valid (NodeConfig JSON on stdout); 1 nodeadm's parse
// refused it; 2 parsed but nodeadm's validation refused it; 3 this program's own
// failure (unreadable input, the stand-in was never asked).
//
// Built by hack/build-bins.sh (component nodeadm-check, pin NODEADM_VERSION).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"

	internalapi "github.com/awslabs/amazon-eks-ami/nodeadm/internal/api"
	"github.com/awslabs/amazon-eks-ami/nodeadm/internal/configprovider"
)

const (
	tokenPath    = "/latest/api/token"
	userDataPath = "/latest/user-data"
	tokenValue   = "atomic-gang-stand-in-token"
)

// imdsStandIn serves userData the way IMDSv2 does; served counts the user-data reads.
func imdsStandIn(userData []byte, served *atomic.Int32) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc(tokenPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		ttl := r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds")
		if ttl == "" {
			http.Error(w, "missing token TTL", http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", ttl)
		_, _ = io.WriteString(w, tokenValue)
	})
	mux.HandleFunc(userDataPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != tokenValue {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(userData)
	})
	return httptest.NewServer(mux)
}

func readInput(args []string) ([]byte, error) {
	switch {
	case len(args) == 0 || (len(args) == 1 && args[0] == "-"):
		return io.ReadAll(os.Stdin)
	case len(args) == 1:
		return os.ReadFile(args[0])
	default:
		return nil, fmt.Errorf("usage: nodeadm-check [USER_DATA_FILE|-]")
	}
}

// failure is a stage's error and the exit code it maps to.
type failure struct {
	code  int
	stage string
	err   error
}

func check(args []string) (*internalapi.NodeConfig, *failure) {
	userData, err := readInput(args)
	if err != nil {
		return nil, &failure{3, "input", err}
	}
	var served atomic.Int32
	server := imdsStandIn(userData, &served)
	defer server.Close()
	// Read by imds.New when nodeadm builds its provider, so set before that.
	_ = os.Unsetenv("AWS_EC2_METADATA_DISABLED")
	if err := os.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server.URL); err != nil {
		return nil, &failure{3, "input", err}
	}
	provider, err := configprovider.BuildConfigProvider("imds://user-data")
	if err != nil {
		return nil, &failure{3, "provider", err}
	}
	config, err := provider.Provide()
	if served.Load() == 0 {
		err = fmt.Errorf("the stand-in IMDS was never asked for user data (provider: %v)", err)
		return nil, &failure{3, "imds", err}
	}
	if err != nil {
		return nil, &failure{1, "parse", err}
	}
	if err := internalapi.ValidateNodeConfig(config); err != nil {
		return nil, &failure{2, "validate", err}
	}
	return config, nil
}

func main() {
	config, f := check(os.Args[1:])
	if f == nil {
		out, err := json.MarshalIndent(config, "", "  ")
		if err == nil {
			fmt.Println(string(out))
			return
		}
		f = &failure{3, "output", err}
	}
	fmt.Fprintf(os.Stderr, "nodeadm %s: %v\n", f.stage, f.err)
	os.Exit(f.code)
}
