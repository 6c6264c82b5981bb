// Connect's type declarations name the Fetch API's HeadersInit. Node 20 has Headers (and
// @types/node 20 declares it) but no global HeadersInit type; derive it from Headers rather than
// pulling in the whole DOM library.
type HeadersInit = NonNullable<ConstructorParameters<typeof Headers>[0]>;
