// The `obsidian` mock as a browser global, for loading the production main.js (which `require`s "obsidian").
import * as obsidian from "../__mocks__/obsidian";

(window as unknown as { obsidianShim: typeof obsidian }).obsidianShim = obsidian;
