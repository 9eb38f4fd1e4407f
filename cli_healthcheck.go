package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

func newHealthcheckCommand() *cobra.Command {
	var addr string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Ask a running server whether it is ready (GET /readyz); exit 0 when it is, 1 when not",
		Long: `healthcheck asks the server on --http-addr (the same flag and
MAILBOLT_HTTP_ADDR as serve) for GET /readyz and exits 0 when it answers
ready, 1 otherwise, saying why. Containers without curl use it as their
health check.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A deadline already past would report a ready server as not
			// ready ("context deadline exceeded").
			if timeout <= 0 {
				return fmt.Errorf("--timeout must be positive, not %s", timeout)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			status, err := readyz(ctx, addr)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), status)
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "http-addr", defaultServeConfig().httpAddr, "address the server's HTTP API listens on (as serve --http-addr)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// readyz asks the server at addr whether it is ready. An unspecified
// bind address (0.0.0.0, ::) is asked on loopback.
func readyz(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http-addr: %q is not host:port", addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	url := "http://" + net.JoinHostPort(host, port) + "/readyz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("not ready: %s does not answer: %w", url, err)
	}
	defer resp.Body.Close()
	var ans struct{ Status, Reason string }
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(body, &ans) != nil || ans.Status == "" {
		return "", fmt.Errorf("not ready: %s answered %d without a readiness report", url, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("not ready: %s (%s)", ans.Reason, url)
	}
	return ans.Status, nil
}
