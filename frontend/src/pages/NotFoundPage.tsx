import { Link } from "react-router-dom";

import { Empty } from "../components/common";

export function NotFoundPage() {
  return (
    <Empty title="There is no page here">
      <Link to="/">Go to the jobs</Link>.
    </Empty>
  );
}
