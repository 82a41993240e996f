export function TimelinePage() {
  return <div>timeline</div>;
}
