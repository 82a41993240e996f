/** Reading the lanes canvas the way a user's eye does: where are bars of a given colour. */

import type { Page } from "@playwright/test";

export interface Spot {
  x: number;
  y: number;
}

/**
 * CSS-pixel positions (relative to the canvas) whose colour is within `tolerance` of `hex`, one per
 * 8x8 block at most so the list stays short.
 */
export async function spotsOfColour(page: Page, hex: string, tolerance = 24): Promise<Spot[]> {
  return page.getByTestId("lanes-canvas").evaluate(
    (element, args) => {
      const canvas = element as HTMLCanvasElement;
      const context = canvas.getContext("2d");
      if (context === null) return [];
      const ratio = canvas.width / canvas.getBoundingClientRect().width;
      const { data, width, height } = context.getImageData(0, 0, canvas.width, canvas.height);
      const target = [1, 3, 5].map((i) => parseInt(args.hex.slice(i, i + 2), 16));
      const seen = new Set<string>();
      const spots: { x: number; y: number }[] = [];
      for (let y = 0; y < height; y += 1) {
        for (let x = 0; x < width; x += 1) {
          const at = (y * width + x) * 4;
          const close = target.every((value, channel) => Math.abs((data[at + channel] ?? 0) - value) <= args.tolerance);
          if (!close || (data[at + 3] ?? 0) < 200) continue;
          const block = `${Math.floor(x / (8 * ratio))},${Math.floor(y / (8 * ratio))}`;
          if (seen.has(block)) continue;
          seen.add(block);
          spots.push({ x: x / ratio, y: y / ratio });
        }
      }
      return spots;
    },
    { hex, tolerance },
  );
}

// The light theme's kind colours (frontend/src/timeline/kinds.ts).
export const LIGHT = { read: "#2f6fdf", write: "#e8850c", fsync: "#d6336c", open: "#2f9e44", close: "#1098ad" };
