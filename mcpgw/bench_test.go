package mcpgw_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayAllowedCall is the gateway's added latency on an allowed
// call: the same echo called on the upstream directly and through the
// gateway (Streamable HTTP from the client, the gate on PostgreSQL: a
// proposal and a recorded result per call), with the upstream over
// Streamable HTTP and over stdio. `make bench-mcp` prints the ratios.
func BenchmarkGatewayAllowedCall(b *testing.B) {
	h := setup(b, harnessOpts{proc: true})
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	direct := map[string]mcp.Transport{
		"http":  &mcp.StreamableClientTransport{Endpoint: h.upstream},
		"stdio": &mcp.CommandTransport{Command: stdioUpstream(h)},
	}
	tool := map[string]string{"http": "demo.echo", "stdio": "proc.echo"}
	for _, upstream := range []string{"http", "stdio"} {
		d, err := client.Connect(b.Context(), direct[upstream], nil)
		if err != nil {
			b.Fatal(err)
		}
		g := h.connect("agent", nil)
		args := map[string]any{"message": "bench"}
		for _, side := range []struct {
			path string
			cs   *mcp.ClientSession
			name string
		}{{"direct", d, "echo"}, {"gateway", g, tool[upstream]}} {
			b.Run("upstream="+upstream+"/path="+side.path, func(b *testing.B) {
				for b.Loop() {
					res, err := side.cs.CallTool(b.Context(), &mcp.CallToolParams{Name: side.name, Arguments: args})
					if err != nil || res.IsError {
						b.Fatalf("%s: %v %v", side.name, err, res)
					}
				}
			})
		}
		_ = d.Close()
		_ = g.Close()
	}
}

func stdioUpstream(h *harness) *exec.Cmd {
	cmd := exec.Command(h.exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), upstreamEnv+"=1")
	return cmd
}
