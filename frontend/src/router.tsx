import { createBrowserRouter } from "react-router-dom";

import { Layout } from "./components/Layout";
import { ComparePage } from "./pages/ComparePage";
import { RequireLogin } from "./components/RequireLogin";
import { AuditPage } from "./pages/AuditPage";
import { ImportPage } from "./pages/ImportPage";
import { JobsPage } from "./pages/JobsPage";
import { LaunchPage } from "./pages/LaunchPage";
import { LoginPage } from "./pages/LoginPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { PasswordPage } from "./pages/PasswordPage";
import { ProtectedPage } from "./pages/ProtectedPage";
import { RunPage } from "./pages/RunPage";
import { ServersPage } from "./pages/ServersPage";
import { TimelinePage } from "./pages/TimelinePage";
import { TrendsPage } from "./pages/TrendsPage";
import { UsersPage } from "./pages/UsersPage";

export const router = createBrowserRouter([
  { path: "/login", element: <LoginPage /> },
  {
    path: "/password",
    element: (
      <RequireLogin allowOneTimePassword>
        <PasswordPage />
      </RequireLogin>
    ),
  },
  {
    element: (
      <RequireLogin>
        <Layout />
      </RequireLogin>
    ),
    children: [
      { path: "/", element: <JobsPage /> },
      { path: "/launch", element: <LaunchPage /> },
      { path: "/import", element: <ImportPage /> },
      { path: "/jobs/:jobId", element: <RunPage /> },
      { path: "/jobs/:jobId/timeline", element: <TimelinePage /> },
      { path: "/compare", element: <ComparePage /> },
      { path: "/servers", element: <ServersPage /> },
      { path: "/trends", element: <TrendsPage /> },
      { path: "/protected", element: <ProtectedPage /> },
      { path: "/users", element: <UsersPage /> },
      { path: "/audit", element: <AuditPage /> },
      { path: "*", element: <NotFoundPage /> },
    ],
  },
]);
