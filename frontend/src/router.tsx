import { createBrowserRouter } from "react-router-dom";

import { Layout } from "./components/Layout";
import { ImportPage } from "./pages/ImportPage";
import { JobsPage } from "./pages/JobsPage";
import { LaunchPage } from "./pages/LaunchPage";
import { NotFoundPage } from "./pages/NotFoundPage";
import { RunPage } from "./pages/RunPage";
import { TimelinePage } from "./pages/TimelinePage";

export const router = createBrowserRouter([
  {
    element: <Layout />,
    children: [
      { path: "/", element: <JobsPage /> },
      { path: "/launch", element: <LaunchPage /> },
      { path: "/import", element: <ImportPage /> },
      { path: "/jobs/:jobId", element: <RunPage /> },
      { path: "/jobs/:jobId/timeline", element: <TimelinePage /> },
      { path: "*", element: <NotFoundPage /> },
    ],
  },
]);
