// The protocol as the client sees it: every type is generated (generated.ts, made by
// `npm run gen:protocol` from schemas/ and the tables of docs/PROTOCOL.md). Write none by hand
// here: a type the generator does not make belongs in the schemas or in the generator.
export * from './generated';
