import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// `npm run dev` proxies the API to a backend started with `make run` on its default port.
const backend = "http://127.0.0.1:8000";

export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api": backend } },
  build: { chunkSizeWarningLimit: 800 },
  test: { include: ["src/**/*.test.ts"], environment: "node" },
});
